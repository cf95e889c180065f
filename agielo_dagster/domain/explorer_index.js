var DATA = JSON.parse(document.getElementById("explorer-data").textContent);
var WORDS = DATA.words;
document.getElementById("pool-legend").textContent = WORDS.pool;
document.getElementById("level").textContent = WORDS.level;
document.getElementById("rank-legend").textContent = WORDS.ranks;
document.getElementById("saturated").textContent = fmt(100 * WORDS.saturated, 0) + " %";

// the columns a table has data for (every table column is optional but its key)
function present(columns, data) { return columns.filter(function (c) { return c.always || c.key in data; }); }
function saturated(b) { return b.saturation !== null && b.saturation !== undefined && b.saturation >= WORDS.saturated; }

// ---- benchmarks
var benchmarks = rowsOf(DATA.benchmarks);
var worn = benchmarks.filter(saturated).map(function (b) { return b.benchmark; });
document.getElementById("saturation-summary").textContent = benchmarks.length + " benchmarks; " +
  (benchmarks.length - worn.length) + " still separate models" +
  (worn.length ? "; saturated: " + worn.join(", ") + "." : "; none is saturated.");
Table(document.getElementById("benchmarks-table"), {
  id: "benchmarks", rows: benchmarks, sortKey: "benchmark", sortDir: 1, pageSize: 50, noun: "benchmarks",
  placeholder: "search benchmarks", search: function (r) { return r.benchmark; },
  rowClass: function (r) { return saturated(r) ? "saturated" : ""; },
  columns: present([
    {key: "benchmark", label: "benchmark", text: true, always: true, render: function (r) {
      if (!r.page) { return r.benchmark; }
      return el("a", {href: r.page, "class": "benchmark-link"}, r.benchmark);
    }},
    {key: "test_cases", label: "test cases", digits: 0},
    {key: "agents", label: "agents", digits: 0},
    {key: "centre", label: "centre", digits: 0, title: "its test cases' typical difficulty on the pool's scale (Elo)"},
    {key: "spread", label: "spread", digits: 0, title: "the standard deviation of its difficulties (Elo)"},
    {key: "difficulty_p10", label: "difficulty p10 – p90", title: "the middle 80 % of its difficulties (Elo)",
     render: function (r) { return fmt(r.difficulty_p10, 0) + " – " + fmt(r.difficulty_p90, 0); }},
    {key: "component", label: "component", title: "0: the leaderboard's; another: a scale of its own, not comparable",
     render: function (r) { return r.component === 0 ? "main" : r.component + ": not comparable"; }},
    {key: "best_agent", label: "best agent", text: true},
    {key: "saturation", label: "saturation", title: "the share of its test cases the best agent is expected to pass",
     render: function (r) { return r.saturation === null ? "–" : fmt(100 * r.saturation, 0) + " %"; }},
    {key: "separates", label: "separates models?", text: true},
    {key: "higher_is_better", label: "metric", render: function (r) {
      return r.higher_is_better === false ? "lower is better" : "higher is better";
    }}
  ], DATA.benchmarks)
});

// ---- the leaderboard (component 0) and, apart, the agents no test case links to it
var agents = rowsOf(DATA.agents);
function ranked(a) { return a.component === 0 && a.status === "rated" && a.rank !== null && a.rank !== undefined; }
var rankCount = {};
agents.forEach(function (a) { if (ranked(a)) { rankCount[a.rank] = (rankCount[a.rank] || 0) + 1; } });
function zoomOf(rows) {  // every interval in a window of ±half Elo around its own rating, half fitted to the widest
  var half = 0;
  rows.forEach(function (a) { if (a.mu_lo !== null && a.mu_lo !== undefined) { half = Math.max(half, a.mu - a.mu_lo, a.mu_hi - a.mu); } });
  return {half: Math.max(1, half * WORDS.zoom)};
}
function agentCell(r) {
  var s = el("span", {"class": "agent-name"}, r.agent_id);
  if (r.status === "rated") { return s; }
  var w = el("span"), b = el("span", {"class": r.status === "provisional" ? "badge" : "badge off"}, r.status);
  if (r.status_reason) { b.setAttribute("title", r.status_reason); }
  w.appendChild(s); w.appendChild(b); return w;
}
function board(root, id, rows, withRanks) {
  var zoom = zoomOf(rows), cols = [];
  if (withRanks) {
    // a provisional agent takes no rank of its own: its rank range is where its interval puts it among the rated
    cols.push({key: "rank", label: "rank", asc: true, title: "= marks a rank shared with other agents",
      sort: function (r) { return r._i; }, render: function (r) {
        return ranked(r) ? (rankCount[r.rank] > 1 ? "=" : "") + r.rank : "–";
      }});
    cols.push({key: "rank_lo", label: "rank range", asc: true, title: "the best and worst ranks the intervals allow",
      sort: function (r) { return r._i; }, render: function (r) {
        if (r.rank_lo === null || r.rank_lo === undefined) { return "–"; }
        return r.rank_lo === r.rank_hi ? String(r.rank_lo) : r.rank_lo + "–" + r.rank_hi;
      }});
  }
  cols.push({key: "mu_lo", label: "interval", title: "the rating's " + WORDS.level + " interval, ±" + fmt(zoom.half, 0) +
    " Elo around each rating (" + WORDS.zoom + "× the widest half-interval)",
    sort: function (r) { return r.mu; }, render: function (r) { return intervalCell(r.mu_lo, r.mu, r.mu_hi, zoom); }});
  cols.push({key: "agent_id", label: "agent", text: true, always: true, render: agentCell});
  cols.push({key: "mu", label: "rating", digits: 1, always: true});
  cols.push({key: "benchmarks", label: "benchmarks", digits: 0});
  cols.push({key: "test_cases", label: "test cases", digits: 0});
  return Table(root, {
    id: id, rows: rows, columns: present(cols, DATA.agents), sortKey: withRanks ? "rank" : "mu", sortDir: withRanks ? 1 : -1,
    pageSize: 50, noun: "agents", placeholder: "search agents", search: function (r) { return r.agent_id; },
    rowClass: function (r) { return r.status === "provisional" ? "provisional" : r.status === "rated" ? "" : "off"; }
  });
}
board(document.getElementById("leaderboard-table"), "leaderboard", agents.filter(function (a) { return a.component === 0; }), true);
var others = {};
agents.forEach(function (a) { if (a.component !== 0) { (others[a.component] = others[a.component] || []).push(a); } });
Object.keys(others).sort(function (a, b) { return a - b; }).forEach(function (k) {
  var box = el("div", {"class": "component", id: "component-" + k});
  box.appendChild(el("h3", null, "Component " + k + ": " + others[k].length + " agent" + (others[k].length > 1 ? "s" : "")));
  box.appendChild(el("p", {"class": "muted"}, WORDS.otherComponent));
  document.getElementById("components").appendChild(box);
  board(box, "component-" + k + "-board", others[k], false);
});

// ---- each agent on each benchmark: its rating there moved onto the pool's scale, beside its pooled rating
var cells = DATA.cells;
function cellOf(key, i, r) { return cells[key] ? cells[key]["b" + i][r._i] : null; }
var matrix = [
  {key: "agent_id", label: "agent", text: true, render: agentCell},
  {key: "mu", label: "pooled rating", digits: 0, title: "its rating on the pool's scale, from every benchmark at once"}
];
benchmarks.forEach(function (b, i) {
  matrix.push({key: "b" + i, label: b.benchmark, title: b.benchmark + ": the agent's rating there, on the pool's scale",
    sort: function (r) { return cellOf("pool", i, r); }, render: function (r) {
      var v = cellOf("pool", i, r);
      if (v === null) { return el("span", {"class": "unplayed", title: "not evaluated on " + b.benchmark}, "·"); }
      var own = cellOf("own", i, r), n = cellOf("test_cases", i, r), status = cellOf("status", i, r);
      var why = b.benchmark + ": " + fmt(own, 0) + " on its own scale" + (n !== null ? ", " + fmt(n, 0) + " test cases" : "");
      return el("span", {"class": status === "rated" || status === null ? "" : "provisional", title: why + (status ? ", " + status : "")}, fmt(v, 0));
    }});
});
Table(document.getElementById("by-benchmark-table"), {
  id: "by-benchmark", rows: agents, columns: matrix, sortKey: "mu", sortDir: -1, pageSize: 50, noun: "agents",
  placeholder: "search agents", search: function (r) { return r.agent_id; },
  rowClass: function (r) { return r.component === 0 ? "" : "off"; }
});
