// The explorer's widgets, shared by its pages (explorer.js: a benchmark's; explorer_index.js: the index):
// explorer.py puts them first inside each page's one function, so they stay out of the global scope.
var SVGNS = "http://www.w3.org/2000/svg";
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) { for (var k in attrs) { e.setAttribute(k, attrs[k]); } }
  if (text !== undefined && text !== null) { e.textContent = text; }
  return e;
}
function sv(tag, attrs, text) {
  var e = document.createElementNS(SVGNS, tag);
  if (attrs) { for (var k in attrs) { e.setAttribute(k, attrs[k]); } }
  if (text !== undefined && text !== null) { e.textContent = text; }
  return e;
}
function fmt(v, d) {
  if (v === null || v === undefined) { return "–"; }
  if (typeof v === "number") { return v.toFixed(d === undefined ? 1 : d); }
  return String(v);
}
function rowsOf(cols) {
  var keys = Object.keys(cols || {}), n = keys.length ? cols[keys[0]].length : 0, out = [];
  for (var i = 0; i < n; i++) { var r = {_i: i}; keys.forEach(function (k) { r[k] = cols[k][i]; }); out.push(r); }
  return out;
}
function extent(values) {
  var lo = Infinity, hi = -Infinity;
  values.forEach(function (v) { if (v !== null && isFinite(v)) { if (v < lo) { lo = v; } if (v > hi) { hi = v; } } });
  if (lo === Infinity) { return [0, 1]; }
  if (lo === hi) { return [lo - 1, hi + 1]; }
  return [lo, hi];
}
function scale(d0, d1, r0, r1) { return function (v) { return r0 + (v - d0) / (d1 - d0) * (r1 - r0); }; }
function ticks(lo, hi, n) {
  var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n))), err = (hi - lo) / n / step;
  if (err >= 7.5) { step *= 10; } else if (err >= 3.5) { step *= 5; } else if (err >= 1.5) { step *= 2; }
  var out = [];
  for (var t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) { out.push(Math.round(t * 1e6) / 1e6); }
  return out;
}
function axes(g, x, y, xd, yd, box, xlabel, ylabel) {
  var a = sv("g", {"class": "axis"}), xb = box.xb || box.b;  // the x axis may sit below the plot (under a strip)
  a.appendChild(sv("line", {x1: box.l, x2: box.r, y1: xb, y2: xb}));
  a.appendChild(sv("line", {x1: box.l, x2: box.l, y1: box.t, y2: box.b}));
  ticks(xd[0], xd[1], 8).forEach(function (t) {
    a.appendChild(sv("line", {x1: x(t), x2: x(t), y1: xb, y2: xb + 4}));
    a.appendChild(sv("text", {x: x(t), y: xb + 16, "text-anchor": "middle"}, fmt(t, Math.abs(t) < 10 && t % 1 ? 2 : 0)));
  });
  ticks(yd[0], yd[1], 5).forEach(function (t) {
    a.appendChild(sv("line", {x1: box.l - 4, x2: box.l, y1: y(t), y2: y(t)}));
    a.appendChild(sv("text", {x: box.l - 7, y: y(t) + 4, "text-anchor": "end"}, fmt(t, Math.abs(t) < 10 && t % 1 ? 2 : 0)));
  });
  a.appendChild(sv("text", {x: (box.l + box.r) / 2, y: xb + 34, "text-anchor": "middle"}, xlabel));
  a.appendChild(sv("text", {x: 14, y: (box.t + box.b) / 2, "text-anchor": "middle",
    transform: "rotate(-90 14 " + (box.t + box.b) / 2 + ")"}, ylabel));
  g.appendChild(a);
}

// ---- tooltip
var tip = document.getElementById("tooltip");
function showTip(evt, title, pairs) {
  while (tip.firstChild) { tip.removeChild(tip.firstChild); }
  tip.appendChild(el("div", {"class": "title"}, title));
  var dl = el("dl");
  pairs.forEach(function (p) { dl.appendChild(el("dt", null, p[0])); dl.appendChild(el("dd", null, p[1])); });
  tip.appendChild(dl);
  tip.style.display = "block";
  var x = evt.clientX + 14, y = evt.clientY + 14, w = tip.offsetWidth, h = tip.offsetHeight;
  if (x + w > window.innerWidth - 8) { x = evt.clientX - w - 14; }
  if (y + h > window.innerHeight - 8) { y = evt.clientY - h - 14; }
  tip.style.left = Math.max(4, x) + "px";
  tip.style.top = Math.max(4, y) + "px";
}
function hideTip() { tip.style.display = "none"; }

// ---- a sortable, searchable, paged table
function Table(root, o) {
  var state = {query: "", key: o.sortKey, dir: o.sortDir || -1, page: 0, size: o.pageSize || 50};
  var controls = el("div", {"class": "controls"});
  var search = el("input", {type: "search", placeholder: o.placeholder || "search", id: o.id + "-search", "aria-label": "search"});
  var size = el("select", {id: o.id + "-size", "aria-label": "rows per page"});
  [25, 50, 100, 500].forEach(function (s) { var op = el("option", {value: String(s)}, s + " rows"); if (s === state.size) { op.selected = true; } size.appendChild(op); });
  var info = el("span", {"class": "muted", id: o.id + "-info"});
  controls.appendChild(search); controls.appendChild(size); controls.appendChild(info);
  if (o.extraControl) { controls.insertBefore(o.extraControl, search); }
  var table = el("table", {"class": "grid", id: o.id + "-grid"}), thead = el("thead"), tbody = el("tbody"), hr = el("tr");
  o.columns.forEach(function (c) {
    var th = el("th", {"class": c.text ? "text" : "", scope: "col", "data-key": c.key}, c.label);
    if (c.title) { th.setAttribute("title", c.title); }
    th.addEventListener("click", function () {
      if (state.key === c.key) { state.dir = -state.dir; } else { state.key = c.key; state.dir = c.text || c.asc ? 1 : -1; }
      state.page = 0; render();
    });
    hr.appendChild(th);
  });
  thead.appendChild(hr); table.appendChild(thead); table.appendChild(tbody);
  var pager = el("div", {"class": "controls"});
  var prev = el("button", {type: "button", id: o.id + "-prev"}, "‹ previous"), next = el("button", {type: "button", id: o.id + "-next"}, "next ›");
  var where = el("span", {"class": "muted"});
  pager.appendChild(prev); pager.appendChild(where); pager.appendChild(next);
  root.appendChild(controls); root.appendChild(table); root.appendChild(pager);
  var filtered = [];
  function value(r, c) { return c.sort ? c.sort(r) : r[c.key]; }
  function render() {
    var q = state.query.toLowerCase();
    filtered = o.rows.filter(function (r) { return (!o.filter || o.filter(r)) && (!q || o.search(r).toLowerCase().indexOf(q) >= 0); });
    var col = o.columns.filter(function (c) { return c.key === state.key; })[0];
    if (col) {
      filtered.sort(function (a, b) {
        var x = value(a, col), y = value(b, col);
        if (x === null || x === undefined) { return 1; } if (y === null || y === undefined) { return -1; }
        return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
      });
    }
    Array.prototype.forEach.call(hr.children, function (th) {
      th.setAttribute("aria-sort", th.getAttribute("data-key") === state.key ? (state.dir > 0 ? "ascending" : "descending") : "none");
    });
    var pages = Math.max(1, Math.ceil(filtered.length / state.size));
    state.page = Math.min(state.page, pages - 1);
    while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
    filtered.slice(state.page * state.size, (state.page + 1) * state.size).forEach(function (r) {
      var tr = el("tr");
      if (o.rowClass) { var cls = o.rowClass(r); if (cls) { tr.setAttribute("class", cls); } }
      o.columns.forEach(function (c) {
        var td = el("td", {"class": (c.text ? "text " : "") + "col-" + c.key});
        var v = c.render ? c.render(r) : fmt(r[c.key], c.digits);
        if (typeof v === "string") { td.textContent = v; } else { td.appendChild(v); }
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
    info.textContent = filtered.length + " of " + o.rows.length + " " + (o.noun || "rows");
    where.textContent = "page " + (state.page + 1) + " of " + pages;
    prev.disabled = state.page === 0; next.disabled = state.page >= pages - 1;
    if (o.onChange) { o.onChange(filtered, state.query); }
  }
  search.addEventListener("input", function () { state.query = search.value; state.page = 0; render(); });
  size.addEventListener("change", function () { state.size = parseInt(size.value, 10); state.page = 0; render(); });
  prev.addEventListener("click", function () { state.page -= 1; render(); });
  next.addEventListener("click", function () { state.page += 1; render(); });
  render();
  return {render: render};
}

function intervalBar(lo, mu, hi, dom) {
  // dom: [d0, d1] on the whole board's scale, or {half: h}: a window of ±h Elo around this rating (a zoom)
  var zoomed = dom.half !== undefined && mu !== null;
  if (zoomed) { dom = [mu - dom.half, mu + dom.half]; }
  var w = 120, x = scale(dom[0], dom[1], 4, w - 4), s = sv("svg", {width: w, height: 12, "class": "interval" + (zoomed ? " zoomed" : "")});
  if (zoomed) { s.appendChild(sv("line", {x1: w / 2, x2: w / 2, y1: 1, y2: 11, stroke: "#dde", "stroke-width": 1})); }
  if (lo !== null && hi !== null) { s.appendChild(sv("line", {x1: x(lo), x2: x(hi), y1: 6, y2: 6, stroke: "#789", "stroke-width": 2})); }
  if (mu !== null) { s.appendChild(sv("circle", {cx: x(mu), cy: 6, r: 3, fill: "#c60"})); }
  return s;
}
function intervalCell(lo, mu, hi, dom) {
  var span = el("span");
  span.appendChild(intervalBar(lo, mu, hi, dom));
  span.appendChild(document.createTextNode(" " + fmt(lo, 0) + " – " + fmt(hi, 0)));
  return span;
}
