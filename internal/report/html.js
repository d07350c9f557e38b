// report.html's charts: drawn with the embedded uPlot from the JSON in
// #soakd-data (see report/htmlcharts.go for its shape). Each chart goes in
// the element whose data-chart is its id; a chart that cannot be drawn is
// named in #charts-not-drawn, which stays hidden when every chart was drawn.
// The section bar (#sections) links every h2 of the page, each given an
// id from its text: it stays at the top while the page scrolls.
(function () {
  "use strict";
  var nav = document.getElementById("sections");
  if (!nav) return;
  var used = {};
  document.querySelectorAll("h2").forEach(function (h) {
    if (!h.id) {
      var base = "s-" + h.textContent.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, ""), id = base, n = 2;
      while (used[id] || document.getElementById(id)) id = base + "-" + n++;
      h.id = id;
    }
    used[h.id] = true;
    var a = document.createElement("a");
    a.href = "#" + h.id;
    a.textContent = h.textContent;
    nav.appendChild(a);
  });
  nav.hidden = nav.children.length === 0;
})();
(function () {
  "use strict";
  var errBox = document.getElementById("charts-not-drawn");
  function fail(where, e) {
    errBox.hidden = false;
    var li = document.createElement("li");
    li.textContent = where + ": " + (e && e.message ? e.message : String(e));
    errBox.querySelector("ul").appendChild(li);
  }
  window.addEventListener("error", function (ev) { fail("script", ev.error || ev.message); });

  var data;
  try {
    data = JSON.parse(document.getElementById("soakd-data").textContent);
  } catch (e) {
    fail("chart data", e);
    return;
  }
  if (typeof uPlot === "undefined") {
    fail("charts", "the chart library did not load");
    return;
  }
  var px = uPlot.pxRatio;

  // Numbers: bytes in binary units, everything else as is, with the unit.
  function scaleOf(unit, max) {
    if (unit === "B" || unit === "B/s") {
      var rate = unit.slice(1), units = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
      for (var i = 0; i < units.length; i++) {
        if (max >= units[i][1]) return [units[i][1], units[i][0] + rate];
      }
    }
    return [1, unit];
  }
  // Byte axes step in binary units, so that ticks read 512 KiB, 1.5 MiB.
  var binaryIncrs = [];
  [1, 1024, 1048576, 1073741824, 1099511627776].forEach(function (k) {
    [1, 2, 5, 10, 20, 50, 100, 200, 500].forEach(function (m) { binaryIncrs.push(m * k); });
  });
  function trim(v) { return String(+v.toPrecision(6)); } // no 0.30000000000000004
  function short(v) {
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return String(+v.toPrecision(3));
  }
  function withUnit(s, unit) { return unit ? s + " " + unit : s; }
  function valueText(unit) {
    return function (u, v) {
      if (v == null || isNaN(v)) return "—";
      var s = scaleOf(unit, Math.abs(v));
      return withUnit(short(v / s[0]), s[1]);
    };
  }
  function tickText(unit) {
    return function (u, splits) {
      var max = 0;
      splits.forEach(function (v) { if (v != null) max = Math.max(max, Math.abs(v)); });
      var s = scaleOf(unit, max);
      return splits.map(function (v) { return v == null ? "" : withUnit(trim(v / s[0]), s[1]); });
    };
  }

  // Time axes: seconds since the run started, shown in s, min or h by span.
  var span = data.time_range[1] - data.time_range[0];
  var tu = span >= 3 * 3600 ? [3600, "h", [900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]]
    : span >= 600 ? [60, "min", [30, 60, 120, 300, 600, 900, 1800, 3600]]
    : [1, "s", [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300]];
  function timeText(v) { return v == null ? "—" : trim(v / tu[0]) + " " + tu[1]; }
  function phaseAt(t) {
    for (var i = 0; i < data.phases.length; i++) {
      var p = data.phases[i];
      if (t >= p.start && t <= p.end) return p;
    }
    return null;
  }

  // Phase bands behind the series, named where the name fits.
  function drawBands(u) {
    var ctx = u.ctx, b = u.bbox;
    ctx.save();
    ctx.font = (11 * px) + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.textAlign = "left";
    data.phases.forEach(function (p, i) {
      var x0 = Math.max(u.valToPos(p.start, "x", true), b.left);
      var x1 = Math.min(u.valToPos(p.end, "x", true), b.left + b.width);
      if (x1 <= x0) return;
      ctx.fillStyle = p.fill;
      ctx.fillRect(x0, b.top, Math.max(x1 - x0, px), b.height);
      if (i % 2) ctx.fillRect(x0, b.top, Math.max(x1 - x0, px), 3 * px); // tells neighbours apart
      if (ctx.measureText(p.name).width + 6 * px <= x1 - x0) {
        ctx.fillStyle = "#424a53";
        ctx.fillText(p.name, x0 + 3 * px, b.top + 5 * px);
      }
    });
    ctx.restore();
  }

  // Dashed vertical marks (peak, failure, knee) with their labels.
  function drawMarks(marks) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox;
      ctx.save();
      ctx.font = (11 * px) + "px system-ui, sans-serif";
      ctx.textBaseline = "top";
      ctx.textAlign = "left";
      ctx.lineWidth = 1.5 * px;
      ctx.setLineDash([5 * px, 4 * px]);
      marks.forEach(function (m, i) {
        var x = u.valToPos(m.x, "x", true);
        if (!(x >= b.left && x <= b.left + b.width)) return;
        ctx.strokeStyle = ctx.fillStyle = m.colour;
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
        var w = ctx.measureText(m.label).width, y = b.top + (4 + 14 * i) * px;
        ctx.fillText(m.label, x + w + 8 * px > b.left + b.width ? x - w - 4 * px : x + 4 * px, y);
      });
      ctx.restore();
    };
  }

  // Log axes: a tick and a grid line at each power of ten only.
  function decades(u, axisIdx, min, max) {
    var out = [];
    for (var e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
      var v = Math.pow(10, e);
      if (v >= min * 0.999 && v <= max * 1.001) out.push(+v.toPrecision(1));
    }
    return out;
  }

  // A value axis as wide as its longest tick label (about 7 px a character).
  function axisSize(u, values) {
    var n = 0;
    (values || []).forEach(function (v) { n = Math.max(n, String(v).length); });
    return Math.max(40, Math.ceil(n * 7 + 18));
  }

  function options(spec, width) {
    var units = [];
    spec.series.forEach(function (s) { if (units.indexOf(s.unit) < 0) units.push(s.unit); });
    var o = {
      width: width, height: 260,
      scales: { x: { time: false } },
      series: [{ label: spec.x_label }],
      axes: [{ label: spec.x_label, labelSize: 22 }],
      legend: { live: true },
      cursor: { points: { size: 7 } },
      hooks: { drawClear: [], draw: [] },
    };
    var x = o.axes[0];
    if (spec.x_kind === "time") {
      o.scales.x.range = [data.time_range[0], data.time_range[1]];
      o.series[0].value = function (u, v) { return timeText(v); };
      x.label += " (" + tu[1] + ")";
      x.incrs = tu[2];
      x.values = function (u, splits) { return splits.map(timeText); };
      o.hooks.drawClear.push(drawBands);
    } else if (spec.x_kind === "category") {
      var n = spec.x_categories.length;
      o.scales.x.range = [-0.5, n - 0.5];
      o.series[0].value = function (u, v) { return v == null ? "—" : spec.x_categories[v]; };
      x.splits = function () { return spec.x_categories.map(function (c, i) { return i; }); };
      x.values = function (u, splits) { return splits.map(function (i) { return spec.x_categories[i] || ""; }); };
    } else {
      o.series[0].value = function (u, v) { return v == null ? "—" : short(v); };
    }
    units.forEach(function (unit, i) {
      var key = "y" + i;
      o.scales[key] = spec.log ? { distr: 3, log: 10 } : { range: function (u, min, max) { return [Math.min(0, min), max > 0 ? max * 1.05 : 1]; } };
      var axis = { scale: key, side: i === 0 ? 3 : 1, size: axisSize, values: tickText(unit), grid: { show: i === 0 } };
      if ((unit === "B" || unit === "B/s") && !spec.log) axis.incrs = binaryIncrs;
      if (spec.log) axis.splits = decades;
      o.axes.push(axis);
    });
    spec.series.forEach(function (s) {
      o.series.push({
        label: s.label, scale: "y" + units.indexOf(s.unit), stroke: s.colour, width: 1.6,
        spanGaps: false, value: valueText(s.unit), points: { show: !!s.points, size: 5, fill: s.colour },
      });
    });
    if (spec.marks && spec.marks.length) o.hooks.draw.push(drawMarks(spec.marks));
    return o;
  }

  var plots = [];
  function widthOf(el) { return Math.max(320, Math.min(980, el.clientWidth || 960)); }
  data.charts.forEach(function (spec) {
    var el = document.querySelector('[data-chart="' + spec.id + '"]');
    if (!el) {
      fail(spec.id, "no place for the chart in the page");
      return;
    }
    try {
      var cols = [spec.x].concat(spec.series.map(function (s) { return s.y; }));
      var o = options(spec, widthOf(el));
      if (spec.x_kind === "time") {
        var at = document.createElement("div");
        at.className = "at";
        el.parentNode.insertBefore(at, el.nextSibling);
        o.hooks.setCursor = [function (u) {
          var i = u.cursor.idx, p = i == null ? null : phaseAt(u.data[0][i]);
          at.textContent = p ? "phase " + p.name + " (" + p.arm + ")" : "";
        }];
      }
      plots.push([new uPlot(o, cols, el), el]);
      el.setAttribute("data-drawn", String(spec.series.length));
    } catch (e) {
      fail(spec.id, e);
    }
  });
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (p) { p[0].setSize({ width: widthOf(p[1]), height: 260 }); });
    }, 150);
  });
})();
(function () {
  "use strict";
  // The flame graph (#flame): an icicle of the tree in #soakd-flame, each
  // node {name, rest_us_per_request, graphql_us_per_request, children}.
  var box = document.getElementById("flame"), src = document.getElementById("soakd-flame");
  if (!box || !src) return;
  var root = JSON.parse(src.textContent), ROW = 17;
  function value(n, view) { return view === "rest" ? n.rest_us_per_request : n.graphql_us_per_request; }
  function colour(n, view) {
    if (view !== "diff") return view === "rest" ? "#9cc3e6" : "#f2b279";
    var g = n.graphql_us_per_request, r = n.rest_us_per_request, d = (g - r) / Math.max(g, r, 1e-9);
    var a = Math.min(1, Math.abs(d));
    if (Math.abs(d) < 0.05) return "#d9d9d9";
    return d > 0 ? "rgba(214,39,40," + (0.25 + 0.75 * a).toFixed(2) + ")" : "rgba(31,119,180," + (0.25 + 0.75 * a).toFixed(2) + ")";
  }
  function draw(view) {
    box.textContent = "";
    var total = Math.max(root.rest_us_per_request, root.graphql_us_per_request), W = box.clientWidth || 800, depth = 0;
    function place(n, x, d) {
      var v = value(n, view), w = v / total * W;
      if (w < 1) return;
      depth = Math.max(depth, d + 1);
      var el = document.createElement("div");
      el.style.left = x.toFixed(1) + "px";
      el.style.top = (d * ROW) + "px";
      el.style.width = w.toFixed(1) + "px";
      el.style.background = colour(n, view);
      // The label is the name after its package path (the tooltip has it whole).
      el.textContent = w > 30 ? n.name.slice(n.name.lastIndexOf("/") + 1) : "";
      el.title = n.name + ": GraphQL " + n.graphql_us_per_request.toFixed(2) + " µs/req, REST " + n.rest_us_per_request.toFixed(2) +
        " µs/req, GraphQL − REST " + (n.graphql_us_per_request - n.rest_us_per_request).toFixed(2) + " µs/req";
      box.appendChild(el);
      var cx = x;
      (n.children || []).forEach(function (c) { place(c, cx, d + 1); cx += value(c, view) / total * W; });
    }
    place(root, 0, 0);
    box.style.height = (depth * ROW + 2) + "px";
    box.setAttribute("data-frames", String(box.children.length));
    box.setAttribute("data-view", view);
  }
  var buttons = document.querySelectorAll("#flame-views button");
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      buttons.forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); });
      draw(b.getAttribute("data-view"));
    });
  });
  draw("graphql");
})();
