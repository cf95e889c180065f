var DATA = JSON.parse(document.getElementById("explorer-data").textContent);
var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

// ---- header
document.getElementById("title").textContent = "AGI-Elo explorer: " + DATA.benchmark;
document.getElementById("description").textContent = DATA.description || "";
document.getElementById("headline").textContent = DATA.headline || "";
document.getElementById("fragility").textContent = DATA.fragility || "";
document.getElementById("level").textContent = DATA.words.level;
document.getElementById("rank-legend").textContent = DATA.words.ranks;
document.getElementById("gap-note").textContent = DATA.words.gaps;
(DATA.unusual || []).forEach(function (line) { document.getElementById("unusual").appendChild(el("li", null, line)); });

// ---- leaderboard
var agents = rowsOf(DATA.agents);
var hasInterval = "mu_lo" in DATA.agents && "mu_hi" in DATA.agents;
var ratingDom = extent(agents.map(function (a) { return a.mu_lo !== undefined ? a.mu_lo : a.mu; })
  .concat(agents.map(function (a) { return a.mu_hi !== undefined ? a.mu_hi : a.mu; })));
// agents outside the main component (disconnected) or without a rating (unplaced) are listed, never drawn or ranked
function offScale(a) { return a.status === "disconnected" || a.status === "unplaced" || a.mu === null || a.mu === undefined; }
var byRating = agents.filter(function (a) { return !offScale(a); }).sort(function (a, b) { return b.mu - a.mu; });
byRating.forEach(function (a, i) { a._order = i + 1; });
// sorted by rank: by rank_lo, then by rating within a rank (a higher rating can rank lower: the page's legend)
function rankOf(a) { return a.rank_lo === undefined || a.rank_lo === null ? Infinity : a.rank_lo; }
byRating.slice().sort(function (a, b) { return rankOf(a) - rankOf(b) || b.mu - a.mu; }).forEach(function (a, i) { a._rankOrder = i; });
// rank (ties marked "="), rank range and interval lead: a rating is as good as its uncertainty
var hasRanks = "rank_lo" in DATA.agents && "rank_hi" in DATA.agents;
var rankCount = {};
// a provisional agent takes no rank of its own (its rank range is where its interval puts it among the rated)
function unranked(a) { return offScale(a) || a.status === "provisional" || a.provisional === true; }
agents.forEach(function (a) { if (!unranked(a) && hasRanks && a.rank_lo !== null) { rankCount[a.rank_lo] = (rankCount[a.rank_lo] || 0) + 1; } });
// the zoom: every interval drawn in a window of ±half Elo around its own rating, half fitted to the widest one
var halfWidest = 0;
agents.forEach(function (a) {
  if (!offScale(a) && a.mu_lo !== undefined && a.mu_lo !== null) { halfWidest = Math.max(halfWidest, a.mu - a.mu_lo, a.mu_hi - a.mu); }
});
var zoom = {half: Math.max(1, halfWidest * DATA.words.zoom)}, intervalDom = hasInterval ? zoom : ratingDom;
var cols = [
  {key: "rank", label: "rank", asc: true, title: "= marks a rank shared with other agents (no interval separates them)",
   sort: function (r) { return offScale(r) ? null : r._rankOrder; }, render: function (r) {
    if (unranked(r)) { return "–"; }
    if (hasRanks && r.rank_lo !== null) { return (rankCount[r.rank_lo] > 1 ? "=" : "") + r.rank_lo; }
    return String(r._order);
  }}
];
if (hasRanks) {
  cols.push({key: "rank_hi", label: "rank range", asc: true, title: "the best and worst ranks the intervals allow",
    sort: function (r) { return offScale(r) ? null : r._rankOrder; }, render: function (r) {
      if (offScale(r) || r.rank_lo === null) { return "–"; }
      return r.rank_lo === r.rank_hi ? String(r.rank_lo) : r.rank_lo + "–" + r.rank_hi;
    }});
}
if (hasInterval) {
  cols.push({key: "mu_lo", label: "interval", title: "the rating's " + DATA.words.level + " interval; the bar's scale is set above the table",
    sort: function (r) { return r.mu; }, render: function (r) { return intervalCell(r.mu_lo, r.mu, r.mu_hi, intervalDom); }});
}
cols = cols.concat([
  {key: "agent_id", label: "agent", text: true, render: function (r) {
    var s = el("span", {"class": "agent-name"}, r.agent_id);
    var status = r.status || (r.provisional ? "provisional" : "rated");
    if (status === "rated") { return s; }
    var w = el("span"), b = el("span", {"class": status === "provisional" ? "badge" : "badge off"}, status);
    if (r.status_reason) { b.setAttribute("title", r.status_reason); }
    w.appendChild(s); w.appendChild(b); return w;
  }},
  {key: "mu", label: "rating", digits: 1}
]);
var zoomControl = null;
if (hasInterval) {
  zoomControl = el("label", {"class": "muted"}, "interval bars: ");
  var zoomSelect = el("select", {id: "interval-scale", "aria-label": "interval bars"});
  zoomSelect.appendChild(el("option", {value: "zoom"}, "zoomed: ±" + fmt(zoom.half, 0) + " Elo around each rating (" + DATA.words.zoom + "× the widest half-interval)"));
  zoomSelect.appendChild(el("option", {value: "board"}, "whole board: " + fmt(ratingDom[0], 0) + " – " + fmt(ratingDom[1], 0)));
  zoomControl.appendChild(zoomSelect);
}
[["matches", "matches", 0], ["mean_metric", "mean metric", 3], ["pct_beaten_50", "% beaten @50%", 1], ["gap_50", "gap to oracle @50%", 0]].forEach(function (c) {
  if (c[0] in DATA.agents) { cols.push({key: c[0], label: c[1], digits: c[2], title: DATA.words.titles[c[0]]}); }
});
var plotApi = null;
var board = Table(document.getElementById("leaderboard-table"), {
  id: "leaderboard", rows: agents, columns: cols, sortKey: "rank", sortDir: 1, pageSize: 50, noun: "agents", extraControl: zoomControl,
  placeholder: "search agents", search: function (r) { return r.agent_id; },
  rowClass: function (r) { return offScale(r) ? "off" : r.provisional ? "provisional" : ""; },
  onChange: function (rows, q) { if (plotApi) { plotApi.highlight(q ? rows : null); } }
});
if (zoomControl) {
  document.getElementById("interval-scale").addEventListener("change", function (e) {
    intervalDom = e.target.value === "zoom" ? zoom : ratingDom; board.render();
  });
}

// ---- difficulty
(function () {
  var root = document.getElementById("difficulty-plot"), tc = rowsOf(DATA.testCases.drawn), hist = DATA.testCases.histogram;
  var tags = DATA.tags, W = 1200, H = 500, box = {l: 56, r: W - 20, t: 110, b: 300, xb: 432};
  var strip = {t: 322, b: 426};
  document.getElementById("difficulty-note").textContent = tc.length < DATA.testCases.total
    ? tc.length + " of " + DATA.testCases.total + " test cases drawn (the hardest, and an even sample of the rest); the histogram counts all."
    : DATA.testCases.total + " test cases; hover one for its tags.";
  var xd = extent(hist.edges.concat(byRating.map(function (a) { return a.mu; })));
  var pad = (xd[1] - xd[0]) * 0.02; xd = [xd[0] - pad, xd[1] + pad];
  var x = scale(xd[0], xd[1], box.l, box.r);
  var ymax = Math.max.apply(null, hist.counts.concat([1]));
  var y = scale(0, ymax * 1.05, box.b, box.t);
  var s = sv("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", id: "difficulty-svg", role: "img", "aria-label": "difficulty distribution"});
  axes(s, x, y, xd, [0, ymax * 1.05], box, "rating (Elo scale): test cases' difficulty, agents' competency", "test cases");
  for (var i = 0; i < hist.counts.length; i++) {
    var x0 = x(hist.edges[i]), x1 = x(hist.edges[i + 1]);
    s.appendChild(sv("rect", {x: x0, width: Math.max(0.5, x1 - x0 - 0.5), y: y(hist.counts[i]), height: box.b - y(hist.counts[i]), fill: "#9ab"}));
  }
  s.appendChild(sv("text", {x: box.l + 4, y: strip.t - 6, fill: "#667"}, "test cases, one dot each (hover one for its tags)"));
  var dots = sv("g", {id: "test-case-dots"});
  tc.forEach(function (t, k) {
    var h = ((t._i * 2654435761) % 1000) / 1000;
    var c = sv("circle", {cx: x(t.mu), cy: strip.t + 6 + h * (strip.b - strip.t - 12), r: 3.2, fill: "#567", "fill-opacity": 0.7,
      "class": "tc", "data-index": String(k)});
    c.addEventListener("mouseenter", function (evt) {
      var pairs = [["rating", fmt(t.mu, 1) + (t.sigma !== undefined && t.sigma !== null ? " ± " + fmt(t.sigma, 1) : "")]];
      if (t.matches !== undefined) { pairs.push(["matches", fmt(t.matches, 0)]); }
      if (t.mean_metric !== undefined) { pairs.push(["mean metric", fmt(t.mean_metric, 3)]); }
      DATA.testCases.metadata.forEach(function (m) { if (t[m] !== null && t[m] !== undefined) { pairs.push([m, fmt(t[m], 3)]); } });
      tags.names.forEach(function (n) {
        var v = tags.values[n][t._i];
        if (v !== null && v !== undefined) { pairs.push([n, Array.isArray(v) ? v.join("; ") : String(v)]); }
      });
      showTip(evt, t.test_case_id, pairs);
    });
    c.addEventListener("mouseleave", hideTip);
    t._dot = c;
    dots.appendChild(c);
  });
  s.appendChild(dots);
  // agents: lines over the histogram, staggered labels in tiers above it
  var shown = byRating.slice(0, DATA.limits.maxAgentLines), lines = sv("g", {id: "agent-lines"});
  var labelled = shown.length <= 40 ? shown : shown.slice(0, 40);
  var tiers = [[], [], [], [], [], []], tierH = 15;
  labelled.slice().sort(function (a, b) { return a.mu - b.mu; }).forEach(function (a) {
    var text = a.agent_id.length > 22 ? a.agent_id.slice(0, 21) + "…" : a.agent_id;
    text += " " + fmt(a.pct_beaten_50, 0) + "%";
    var w = text.length * 6.2 + 6, cx = x(a.mu), left = cx + w > W - 2;  // near the right edge: the label ends at its line
    var start = left ? cx - w : cx;
    for (var k = 0; k < tiers.length; k++) {
      var last = tiers[k][tiers[k].length - 1];
      if (!last || last.end < start - 2) { tiers[k].push({end: left ? cx : cx + w, a: a, text: text, x: cx, left: left}); return; }
    }
  });
  shown.forEach(function (a) {
    var cls = "agent" + (a.provisional ? " provisional" : "");
    var ln = sv("line", {x1: x(a.mu), x2: x(a.mu), y1: box.t - 4, y2: strip.b, "class": cls, "data-agent": String(a._i)});
    var hit = sv("line", {x1: x(a.mu), x2: x(a.mu), y1: box.t - 4, y2: box.b, "class": "hitarea"});
    hit.addEventListener("mouseenter", function (evt) {
      ln.classList.add("hit");
      var pairs = [["rating", fmt(a.mu, 1)]];
      if (a.mu_lo !== undefined) { pairs.push(["interval", fmt(a.mu_lo, 0) + " – " + fmt(a.mu_hi, 0)]); }
      if (a.pct_beaten_50 !== undefined) { pairs.push(["test cases beaten", fmt(a.pct_beaten_50, 1) + "%"]); }
      if (a.provisional) { pairs.push(["status", "provisional"]); }
      showTip(evt, a.agent_id, pairs);
    });
    hit.addEventListener("mouseleave", function () { ln.classList.remove("hit"); hideTip(); });
    a._line = ln;
    lines.appendChild(ln); lines.appendChild(hit);
  });
  tiers.forEach(function (tier, k) {
    tier.forEach(function (l) {
      var ty = box.t - 10 - k * tierH;
      lines.appendChild(sv("line", {x1: l.x, x2: l.x, y1: ty + 2, y2: box.t - 4, stroke: "#c60", "stroke-width": 0.6, opacity: 0.6}));
      lines.appendChild(sv("text", {x: l.left ? l.x - 2 : l.x + 2, y: ty, "text-anchor": l.left ? "end" : "start",
        "class": "agent-label", fill: l.a.provisional ? "#7a5cc7" : "#a40"}, l.text));
    });
  });
  s.appendChild(lines);
  if (shown.length < byRating.length) {
    s.appendChild(sv("text", {x: box.r, y: 14, "text-anchor": "end"}, "the " + shown.length + " best of " + byRating.length + " agents drawn; search the leaderboard to find one"));
  }
  root.appendChild(s);
  // colour by tag
  var select = document.getElementById("color-by"), legend = document.getElementById("color-legend");
  tags.names.forEach(function (n) { select.appendChild(el("option", {value: n}, n)); });
  select.addEventListener("change", function () {
    var n = select.value, colour = {};
    while (legend.firstChild) { legend.removeChild(legend.firstChild); }
    if (n) {
      tags.summary[n].top.slice(0, PALETTE.length).forEach(function (kv, k) {
        colour[kv[0]] = PALETTE[k];
        var item = el("span"); var sw = el("i"); sw.style.background = PALETTE[k];
        item.appendChild(sw); item.appendChild(document.createTextNode(kv[0] + " (" + kv[1] + ")")); legend.appendChild(item);
      });
    }
    tc.forEach(function (t) {
      var v = n ? tags.values[n][t._i] : null, first = Array.isArray(v) ? v.filter(function (z) { return z in colour; })[0] : v;
      t._dot.setAttribute("fill", n && first !== undefined && first !== null && colour[first] ? colour[first] : "#567");
    });
  });
  var summary = document.getElementById("tag-summary");
  if (tags.names.length) {
    summary.textContent = "Tags: " + tags.names.map(function (n) {
      var sm = tags.summary[n]; return n + " (" + sm.test_cases + " test cases, " + sm.distinct + " values)";
    }).join("; ");
  } else { summary.textContent = "No tags: a tag file or metadata columns add them."; }
  plotApi = {highlight: function (rows) {
    var keep = null;
    if (rows) { keep = {}; rows.forEach(function (r) { keep[r._i] = true; }); }
    shown.forEach(function (a) {
      a._line.classList.toggle("dim", !!keep && !keep[a._i]);
      a._line.classList.toggle("hit", !!keep && !!keep[a._i]);
    });
  }};
})();

// ---- slices
(function () {
  var body = document.getElementById("slices-body");
  if (!DATA.slices) { body.appendChild(el("p", {"class": "muted"}, "No slices: tags with enough test cases give them.")); return; }
  var rows = rowsOf(DATA.slices.rows), tagSel = el("select", {id: "slice-tag", "aria-label": "tag"});
  tagSel.appendChild(el("option", {value: ""}, "every tag"));
  Object.keys(rows.reduce(function (m, r) { m[r.tag] = 1; return m; }, {})).forEach(function (t) { tagSel.appendChild(el("option", {value: t}, t)); });
  if (DATA.slices.total > rows.length) { body.appendChild(el("p", {"class": "muted"}, "The first " + rows.length + " of " + DATA.slices.total + " rows.")); }
  body.appendChild(el("p", {"class": "muted"}, "Each agent's rating on the test cases carrying a tag value, against the same frozen test-case ratings; Δ is the slice rating minus the agent's rating on every test case."));
  var dom = extent(rows.map(function (r) { return r.mu_lo; }).concat(rows.map(function (r) { return r.mu_hi; })));
  var t = Table(body, {
    id: "slice", rows: rows, sortKey: "delta", sortDir: 1, pageSize: 50, noun: "slice ratings", extraControl: tagSel,
    placeholder: "search slices and agents", search: function (r) { return r.tag + " " + r.value + " " + r.agent_id; },
    filter: function (r) { return !tagSel.value || r.tag === tagSel.value; },
    columns: [
      {key: "tag", label: "tag", text: true}, {key: "value", label: "value", text: true},
      {key: "test_cases", label: "test cases", digits: 0}, {key: "slice_mean_difficulty", label: "mean difficulty", digits: 0},
      {key: "agent_id", label: "agent", text: true}, {key: "mu", label: "slice rating", digits: 0},
      {key: "mu_lo", label: "interval", sort: function (r) { return r.mu; }, render: function (r) { return intervalCell(r.mu_lo, r.mu, r.mu_hi, dom); }},
      {key: "delta", label: "Δ vs overall", digits: 0}
    ]
  });
  tagSel.addEventListener("change", function () { t.render(); });
})();

// ---- suspect test cases: each one's results by agent, strongest agent first (left)
(function () {
  var body = document.getElementById("suspects-body"), S = DATA.suspects;
  if (!S) { body.appendChild(el("p", {"class": "muted"}, "No suspect test cases: every test case's results follow the agents' ratings, or too few agents played it to tell.")); return; }
  var rows = rowsOf(S.rows), flagSel = el("select", {id: "suspect-flag", "aria-label": "flag"});
  var tagSel = el("select", {id: "suspect-tag", "aria-label": "tag"}), pick = el("span");
  flagSel.appendChild(el("option", {value: ""}, "every flag"));
  Object.keys(rows.reduce(function (m, r) { m[r.flag] = 1; return m; }, {})).forEach(function (f) { flagSel.appendChild(el("option", {value: f}, f)); });
  tagSel.appendChild(el("option", {value: ""}, "every tag"));
  Object.keys(rows.reduce(function (m, r) { r.tag_values.forEach(function (v) { m[v] = 1; }); return m; }, {})).sort()
    .forEach(function (v) { tagSel.appendChild(el("option", {value: v}, v)); });
  pick.appendChild(flagSel); if (tagSel.options.length > 1) { pick.appendChild(tagSel); }
  body.appendChild(el("p", {"class": "muted"}, "Test cases whose results do not follow the agents' ratings: check their reference answer and scoring. Results: one cell per agent, strongest on the left (dark: succeeds, light: fails, blank: not played)." +
    (S.total > rows.length ? " The first " + rows.length + " of " + S.total + "." : "")));
  function strip(r) {
    var w = 4, g = sv("svg", {width: String(Math.max(w * S.agents.length, 1)), height: "14", "class": "results"});
    S.scores[r._i].forEach(function (v, k) {
      if (v === null) { return; }
      var c = sv("rect", {x: String(k * w), y: "1", width: String(w - 1), height: "12", fill: "#1f4e79", "fill-opacity": String(0.12 + 0.88 * v)});
      c.appendChild(sv("title", null, S.agents[k] + ": " + fmt(v, 2)));
      g.appendChild(c);
    });
    return g;
  }
  var t = Table(body, {
    id: "suspect", rows: rows, sortKey: "discrimination", sortDir: 1, pageSize: 25, noun: "suspect test cases", extraControl: pick,
    placeholder: "search ids, tags and reasons", search: function (r) { return r.test_case_id + " " + r.tags + " " + r.flag_reason; },
    filter: function (r) { return (!flagSel.value || r.flag === flagSel.value) && (!tagSel.value || r.tag_values.indexOf(tagSel.value) >= 0); },
    columns: [
      {key: "test_case_id", label: "test case", text: true}, {key: "flag", label: "flag", text: true},
      {key: "discrimination", label: "discrimination", digits: 2, asc: true}, {key: "rating", label: "rating", digits: 0},
      {key: "results", label: "results by agent", sort: function (r) { return r.discrimination; }, render: strip},
      {key: "flag_reason", label: "why", text: true}, {key: "tags", label: "tags", text: true}
    ]
  });
  [flagSel, tagSel].forEach(function (sel) { sel.addEventListener("change", function () { t.render(); }); });
})();

// ---- ability masses
(function () {
  var body = document.getElementById("masses-body");
  if (!DATA.masses) { body.appendChild(el("p", {"class": "muted"}, "No ability masses: test cases carrying an abilities tag give them.")); return; }
  var rows = rowsOf(DATA.masses.rows).sort(function (a, b) { return b.mass - a.mass; }), info = DATA.masses.info;
  var stats = el("p", {"class": "stats"});
  [["alignment", "alignment rate", 3], ["loss", "loss (mean squared error, fit scale)", 4], ["rmse", "RMSE (rating points)", 1], ["max_order", "order", 0]].forEach(function (k) {
    if (info[k[0]] !== undefined && info[k[0]] !== null) { stats.appendChild(el("b", null, k[1] + ": ")); stats.appendChild(document.createTextNode(fmt(info[k[0]], k[2]) + "   ")); }
  });
  body.appendChild(stats);
  var top = rows.slice(0, 40), W = 900, rowH = 18, H = 30 + rowH * top.length, box = {l: 200, r: W - 60};
  var mx = Math.max.apply(null, top.map(function (r) { return r.mass; }).concat([1e-9])), x = scale(0, mx, box.l, box.r);
  var s = sv("svg", {viewBox: "0 0 " + W + " " + H, width: "100%", id: "masses-svg", role: "img", "aria-label": "ability masses"});
  top.forEach(function (r, i) {
    var yy = 10 + i * rowH;
    s.appendChild(sv("text", {x: box.l - 6, y: yy + 12, "text-anchor": "end"}, r.ability.length > 30 ? r.ability.slice(0, 29) + "…" : r.ability));
    s.appendChild(sv("rect", {x: box.l, y: yy + 2, width: Math.max(1, x(r.mass) - box.l), height: rowH - 5, fill: "#4a7"}));
    s.appendChild(sv("text", {x: x(r.mass) + 4, y: yy + 12}, fmt(r.mass, 3)));
  });
  body.appendChild(s);
  Table(body, {id: "mass", rows: rows, sortKey: "mass", sortDir: -1, pageSize: 25, noun: "abilities", placeholder: "search abilities",
    search: function (r) { return r.ability; },
    columns: [{key: "ability", label: "ability", text: true}, {key: "mass", label: "mass M(a)", digits: 3}, {key: "items", label: "items", digits: 0}]});
})();

// ---- line and scatter charts
function chart(root, id, series, o) {
  var W = 560, H = 310, box = {l: 60, r: W - 14, t: 30, b: H - 46}, xs = [], ys = [], legendX = box.l;
  series.forEach(function (sr) { xs = xs.concat(sr.x); ys = ys.concat(sr.y); });
  var xd = o.xd || extent(xs), yd = o.yd || extent(ys), x = scale(xd[0], xd[1], box.l, box.r), y = scale(yd[0], yd[1], box.b, box.t);
  var s = sv("svg", {viewBox: "0 0 " + W + " " + H, width: W, id: id, role: "img", "aria-label": o.ylabel});
  axes(s, x, y, xd, yd, box, o.xlabel, o.ylabel);
  series.forEach(function (sr, k) {
    var pts = [];
    for (var i = 0; i < sr.x.length; i++) { if (sr.x[i] !== null && sr.y[i] !== null) { pts.push([x(sr.x[i]), y(sr.y[i]), sr.r ? sr.r[i] : 3]); } }
    if (sr.dots) {
      pts.forEach(function (p) { s.appendChild(sv("circle", {cx: p[0], cy: p[1], r: p[2], fill: sr.color, "fill-opacity": 0.75})); });
    } else if (pts.length) {
      s.appendChild(sv("polyline", {points: pts.map(function (p) { return p[0].toFixed(1) + "," + p[1].toFixed(1); }).join(" "), fill: "none", stroke: sr.color, "stroke-width": 1.8}));
    }
    s.appendChild(sv("rect", {x: legendX, y: 7, width: 10, height: 10, fill: sr.color}));
    s.appendChild(sv("text", {x: legendX + 14, y: 16}, sr.name));
    legendX += 30 + 6.2 * sr.name.length;
  });
  root.appendChild(s);
}

(function () {
  var body = document.getElementById("reliability-body"), r = DATA.reliability;
  if (!r) { body.appendChild(el("p", {"class": "muted"}, "No reliability table.")); return; }
  var pct = r.fraction.map(function (f) { return f === null ? null : 100 * f; });
  chart(body, "reliability-rho", [{name: "ρ test cases", x: pct, y: r.rho_test_cases, color: "#1f77b4"}, {name: "ρ agents", x: pct, y: r.rho_agents, color: "#d62728"}],
    {xlabel: "share of matches (%)", ylabel: "Spearman ρ", yd: [-1, 1], xd: [0, 100]});
  body.appendChild(el("p", {"class": "muted", id: "rho-meaning"}, "At 100 % of the matches, " + r.meaning));
  chart(body, "reliability-mae", [{name: "MAE", x: pct, y: r.mae, color: "#2ca02c"}, {name: "MSE", x: pct, y: r.mse, color: "#9467bd"}],
    {xlabel: "share of matches (%)", ylabel: "predicted vs empirical error", xd: [0, 100]});
})();

(function () {
  var body = document.getElementById("calibration-body"), c = DATA.calibration;
  if (!c) { body.appendChild(el("p", {"class": "muted"}, "No calibration table.")); return; }
  var curveX = [], curveY = [];
  for (var d = -1250; d <= 1150; d += 25) { curveX.push(d); curveY.push(1 / (1 + Math.pow(10, -d / 400))); }
  var mx = Math.max.apply(null, c.pooled.matches.concat([1]));
  var holder = el("div"), sel = el("select", {id: "calibration-agent", "aria-label": "agent"});
  sel.appendChild(el("option", {value: ""}, "all agents, pooled"));
  var rows = c.agents ? rowsOf(c.agents) : [];
  if (c.agents) { Object.keys(rows.reduce(function (m, r) { m[r.agent_id] = 1; return m; }, {})).sort().forEach(function (a) { sel.appendChild(el("option", {value: a}, a)); }); }
  var ctl = el("div", {"class": "controls"}); ctl.appendChild(el("span", {"class": "muted"}, "show ")); ctl.appendChild(sel);
  body.appendChild(ctl); body.appendChild(holder);
  function draw() {
    while (holder.firstChild) { holder.removeChild(holder.firstChild); }
    var pts;
    if (sel.value) {
      var mine = rows.filter(function (r) { return r.agent_id === sel.value; }), m2 = Math.max.apply(null, mine.map(function (r) { return r.matches; }).concat([1]));
      pts = {name: sel.value, x: mine.map(function (r) { return r.mean_rating_diff; }), y: mine.map(function (r) { return r.empirical_score; }),
        r: mine.map(function (r) { return 2 + 7 * Math.sqrt(r.matches / m2); }), color: "#c60", dots: true};
    } else {
      pts = {name: "empirical (dot size: matches)", x: c.pooled.diff, y: c.pooled.empirical, r: c.pooled.matches.map(function (m) { return 2 + 7 * Math.sqrt(m / mx); }), color: "#c60", dots: true};
    }
    chart(holder, "calibration-svg", [{name: "predicted E[S]", x: curveX, y: curveY, color: "#222"}, pts],
      {xlabel: "agent rating − test-case rating", ylabel: "score", xd: [-1250, 1150], yd: [0, 1]});
  }
  sel.addEventListener("change", draw);
  draw();
})();
