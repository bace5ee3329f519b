/* lagless charts: the one chart module of the live console (`lagless ui`) and the static pages
 * (the run report, the rebalance lab's page). Draws with the vendored uPlot (vendor/uPlot.iife.min.js,
 * MIT, loaded first); needs charts.css (or assets.py's inlined copy). Loads nothing from the network.
 *
 * Every text shown (titles, series names, labels, group ids) goes through textContent or the
 * canvas, never innerHTML: a name holding a script tag or onerror is shown as text, runs nothing.
 *
 * API (global `LaglessCharts`):
 *   LaglessCharts.mount(el, spec) -> handle    draw `spec` into element `el` (its content replaced)
 *   LaglessCharts.handle(id) -> handle         the handle mountAll made for the element of that id
 *   LaglessCharts.mountAll(root = document)    mount every `[data-lg-spec]` element of `root`: the
 *                                              attribute names a script element (type application/json)
 *                                              holding the spec (what lagless.ui.assets writes)
 *   handle.update(spec)                        new data: in place (same uPlot, no flicker) when the
 *                                              series, unit and axis kind are the same, else anew
 *   handle.destroy()
 *   handle.uplot() -> the uPlot instance (null for bars): its scales, valToPos, ctx (tests, sync)
 *   handle.layout() -> {plot, xAxis, yAxis, legend}   page-relative boxes {left, top, right, bottom}
 *                                              of the plot area, the axes' label areas and the legend
 *                                              (what the browser tests check for overlaps)
 *   LaglessCharts.PALETTE, LaglessCharts.TOTAL_COLOR, LaglessCharts.MARKER_STYLES,
 *   LaglessCharts.BAND_STYLES                  the colours and styles used (override per spec)
 *
 * spec.type "timeseries" (the default):
 *   { id, title, unit,                         unit: the y axis' label
 *     x: [number...],                          ascending; seconds since the run's start when
 *     xKind: "elapsed" | "epoch",              "elapsed" (ticks 30s, 2m), epoch seconds when "epoch"
 *     xMin, xMax,                              optional x range (e.g. start where records start)
 *     series: [{ label, values: [number|null...], color, width, dash: [4, 3], total: true }],
 *                                              null breaks the line; `total: true` (e.g. "all")
 *                                              draws thick in TOTAL_COLOR, the others take
 *                                              PALETTE colours in order (distinct from the total)
 *     markers: [{ x, kind, label }],           vertical lines (rebalances, triggers), styled by
 *                                              kind (MARKER_STYLES or spec.markerStyles)
 *     bands: [{ from, to, kind, label }],      shaded spans (rollouts, warm-up, outside the measured
 *                                              window), styled by kind (BAND_STYLES / spec.bandStyles)
 *     note, height, sync,                      note: a line under the legend; sync: a key shared by
 *                                              charts whose cursors move together
 *     markerLabels: true, empty: "no data" }   write each marker's label beside its line; the text
 *                                              shown when nothing is drawn (no series: markers only)
 *   The legend sits below the plot, outside the canvas (so never on the axis labels): one entry per
 *   series, per marker kind and per band kind present, drawn with SVG swatches (kept in screenshots
 *   and print). Hovering shows the values, markers and bands at the cursor in a readout line.
 *
 * spec.type "strip" (the assignment strip: one row per partition over time, coloured by owner):
 *   { id, title, x/xKind/xMin/xMax as above, partitions: N, rows: ["p0", ...] (optional labels),
 *     owners: [{ name, color }],                legend order; colours default to PALETTE
 *     bars: [{ partition, from, to, owner, state: "consuming" | "owned", label }],
 *                                              "owned" (owned, not consuming) is drawn pale
 *     overlaps: [{ partition, from, to, label }],   outlined in red (two owners at once)
 *     markers, bands, note, height }
 *
 * spec.type "bars" (one measure across scenarios; horizontal bars, DOM, printable):
 *   { id, title, unit, categories: ["scenario", ...],
 *     series: [{ label, values: [number|null...], color }],   several series: grouped bars
 *     better: "lower" | "higher", note }       `better` is said in the caption; null shows "-"
 */
(function (global) {
  "use strict";

  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2",
                 "#edc948", "#ff9da7", "#9c755f", "#8cd17d", "#499894", "#d37295"];
  var TOTAL_COLOR = "#222222";
  var OVERLAP_COLOR = "#d62728";
  var MARKER_STYLES = {
    assigned: { color: "#1b7837", dash: [], label: "partitions assigned" },
    revoked: { color: "#d95f02", dash: [5, 3], label: "partitions revoked" },
    lost: { color: "#b2182b", dash: [2, 2], label: "partitions lost" },
    rebalance: { color: "#6a3d9a", dash: [5, 3], label: "rebalance" },
    start: { color: "#333333", dash: [], label: "instance started (trigger)" },
    stop: { color: "#333333", dash: [5, 3], label: "instance stopped (trigger)" }
  };
  var BAND_STYLES = {
    rollout: { fill: "rgba(240, 190, 30, 0.22)", label: "rollout window" },
    "warm-up": { fill: "rgba(78, 121, 167, 0.10)", label: "warm-up (measured)" },
    outside: { fill: "rgba(120, 120, 120, 0.20)", label: "outside the measured window" },
    other: { fill: "rgba(120, 120, 120, 0.12)", label: "window" }
  };
  var SVG_NS = "http://www.w3.org/2000/svg";
  var FONT = "11px system-ui, sans-serif";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    return node;
  }

  function fmtNumber(v) {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    var a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + "k";
    if (a >= 100 || Number.isInteger(v)) return Math.round(v).toLocaleString("en-US");
    if (a === 0) return "0";
    return String(+v.toPrecision(a >= 1 ? 3 : 2));
  }

  // seconds as 45s, 2m10s, 1h5m; `step` (an axis' tick increment) sets the decimals of seconds
  function fmtElapsed(s, step) {
    if (!isFinite(s)) return "";
    var a = Math.abs(s);
    var digits = step > 0 && step < 1 ? Math.min(3, Math.ceil(-Math.log10(step) - 1e-9)) : 1;
    if (a < 120) return +s.toFixed(digits) + "s";
    var sign = s < 0 ? "-" : "";
    var whole = Math.round(a);
    var h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), sec = whole % 60;
    if (h) return sign + h + "h" + (m ? m + "m" : "");
    return sign + m + "m" + (sec ? sec + "s" : "");
  }

  function fmtX(spec, x) {
    if (spec.xKind === "epoch") {
      return new Date(x * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
    }
    return fmtElapsed(x);
  }

  // a kind's style: the spec's, else the module's, else the fallback's drawn under the kind's name
  function styleOf(table, overrides, kind, fallback) {
    var known = (overrides && overrides[kind]) || table[kind];
    if (known) return known;
    var base = table[fallback];
    return { color: base.color, dash: base.dash, fill: base.fill, label: String(kind) };
  }

  function seriesColors(series) {
    var next = 0;
    return series.map(function (s) {
      if (s.color) return s.color;
      if (s.total) return TOTAL_COLOR;
      return PALETTE[next++ % PALETTE.length];
    });
  }

  // ---- legend (DOM, below the plot) ----

  function swatch(kind, style) {
    var box = svg("svg", { width: 22, height: 12, "aria-hidden": "true", class: "lg-swatch" });
    if (kind === "line") {
      box.appendChild(svg("line", { x1: 1, x2: 21, y1: 6, y2: 6, stroke: style.color,
        "stroke-width": style.width || 2, "stroke-dasharray": (style.dash || []).join(" ") }));
    } else if (kind === "marker") {
      box.appendChild(svg("line", { x1: 11, x2: 11, y1: 0, y2: 12, stroke: style.color,
        "stroke-width": 2, "stroke-dasharray": (style.dash || []).join(" ") }));
    } else if (kind === "band") {
      box.appendChild(svg("rect", { x: 1, y: 1, width: 20, height: 10, fill: style.fill,
        stroke: "#999", "stroke-width": 0.5 }));
    } else if (kind === "overlap") {
      box.appendChild(svg("rect", { x: 2, y: 2, width: 18, height: 8, fill: "none",
        stroke: OVERLAP_COLOR, "stroke-width": 1.5 }));
    } else {  // a filled box: an owner, with opacity for "owned, not consuming"
      box.appendChild(svg("rect", { x: 1, y: 1, width: 20, height: 10, fill: style.color,
        "fill-opacity": style.opacity === undefined ? 1 : style.opacity }));
    }
    return box;
  }

  function legendItem(kind, style, label) {
    var item = el("span", "lg-item lg-" + kind);
    item.setAttribute("data-kind", kind);
    item.setAttribute("role", "listitem");
    item.appendChild(swatch(kind, style));
    item.appendChild(el("span", "lg-label", label));
    return item;
  }

  function kindsPresent(list) {
    var seen = [];
    (list || []).forEach(function (m) { if (seen.indexOf(m.kind) < 0) seen.push(m.kind); });
    return seen;
  }

  function legendEntries(spec, legend, colors) {
    (spec.series || []).forEach(function (s, i) {
      legend.appendChild(legendItem("line", { color: colors[i], width: s.total ? 3 : 2,
        dash: s.dash }, s.label));
    });
    kindsPresent(spec.markers).forEach(function (k) {
      var st = styleOf(MARKER_STYLES, spec.markerStyles, k, "rebalance");
      legend.appendChild(legendItem("marker", st, st.label || k));
    });
    kindsPresent(spec.bands).forEach(function (k) {
      var st = styleOf(BAND_STYLES, spec.bandStyles, k, "other");
      legend.appendChild(legendItem("band", st, st.label || k));
    });
  }

  // ---- canvas overlays: bands under the lines, markers over them ----

  function drawBands(u, spec) {
    var ctx = u.ctx, b = u.bbox;
    ctx.save();
    (spec.bands || []).forEach(function (band) {
      var st = styleOf(BAND_STYLES, spec.bandStyles, band.kind, "other");
      var x1 = Math.max(u.valToPos(band.from, "x", true), b.left);
      var x2 = Math.min(u.valToPos(band.to, "x", true), b.left + b.width);
      if (x2 <= x1) return;
      ctx.fillStyle = st.fill;
      ctx.fillRect(x1, b.top, x2 - x1, b.height);
    });
    ctx.restore();
  }

  function drawMarkers(u, spec) {
    var ctx = u.ctx, b = u.bbox, px = devicePixelRatio || 1;
    ctx.save();
    ctx.lineWidth = 1.5 * px;
    (spec.markers || []).forEach(function (m) {
      var x = Math.round(u.valToPos(m.x, "x", true));
      if (x < b.left - 1 || x > b.left + b.width + 1) return;
      var st = styleOf(MARKER_STYLES, spec.markerStyles, m.kind, "rebalance");
      ctx.strokeStyle = st.color;
      ctx.setLineDash((st.dash || []).map(function (d) { return d * px; }));
      ctx.beginPath();
      ctx.moveTo(x, b.top);
      ctx.lineTo(x, b.top + b.height);
      ctx.stroke();
    });
    if (spec.markerLabels) drawMarkerLabels(u, spec);
    ctx.restore();
  }

  // each marker's label beside its line, in three staggered rows (an events chart)
  function drawMarkerLabels(u, spec) {
    var ctx = u.ctx, b = u.bbox, px = devicePixelRatio || 1;
    ctx.setLineDash([]);
    ctx.font = Math.round(11 * px) + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    (spec.markers || []).forEach(function (m, i) {
      var x = u.valToPos(m.x, "x", true);
      if (x < b.left - 1 || x > b.left + b.width + 1) return;
      var text = String(m.label || m.kind);
      var w = ctx.measureText(text).width;
      var right = x + 4 * px + w <= b.left + b.width;
      ctx.fillStyle = styleOf(MARKER_STYLES, spec.markerStyles, m.kind, "rebalance").color;
      ctx.textAlign = right ? "left" : "right";
      ctx.fillText(text, right ? x + 4 * px : x - 4 * px, b.top + (2 + 14 * (i % 3)) * px);
    });
  }

  function drawStrip(u, spec, owners) {
    var ctx = u.ctx, b = u.bbox, px = devicePixelRatio || 1;
    var n = Math.max(spec.partitions || 0, 1);
    function rowTop(p) { return u.valToPos(n - p, "y", true); }
    var rowH = b.height / n;
    ctx.save();
    (spec.bars || []).forEach(function (bar) {
      var x1 = u.valToPos(bar.from, "x", true), x2 = u.valToPos(bar.to, "x", true);
      x1 = Math.max(x1, b.left); x2 = Math.min(x2, b.left + b.width);
      if (x2 < x1) return;
      ctx.globalAlpha = bar.state === "owned" ? 0.35 : 1;
      ctx.fillStyle = (owners[bar.owner] || {}).color || "#777";
      ctx.fillRect(x1, rowTop(bar.partition) + px, Math.max(x2 - x1, px), Math.max(rowH - 2 * px, px));
    });
    ctx.globalAlpha = 1;
    ctx.strokeStyle = OVERLAP_COLOR;
    ctx.lineWidth = 1.5 * px;
    (spec.overlaps || []).forEach(function (o) {
      var x1 = u.valToPos(o.from, "x", true), x2 = u.valToPos(o.to, "x", true);
      ctx.strokeRect(x1, rowTop(o.partition), Math.max(x2 - x1, px), rowH);
    });
    ctx.restore();
  }

  // ---- axes ----

  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1 && axis._size) return axis._size;
    var longest = (values || []).reduce(function (a, v) {
      return String(v).length > a.length ? String(v) : a;
    }, "");
    u.ctx.save();
    u.ctx.font = axis.font ? axis.font[0] : FONT;
    var w = u.ctx.measureText(longest).width / (devicePixelRatio || 1);
    u.ctx.restore();
    return Math.max(48, Math.ceil(w + 14));  // at least 48 px: plots of a page line up
  }

  function xAxis(spec) {
    return {
      font: FONT, size: 28, gap: 4,
      values: function (u, splits, axisIdx, space, incr) { return splits.map(function (s) {
        return spec.xKind === "epoch" ? new Date(s * 1000).toISOString().slice(11, 19)
          : fmtElapsed(s, incr);
      }); }
    };
  }

  function xRange(spec) {
    var xs = spec.x || [];
    var lo = spec.xMin !== undefined && spec.xMin !== null ? spec.xMin : xs[0];
    var hi = spec.xMax !== undefined && spec.xMax !== null ? spec.xMax : xs[xs.length - 1];
    if (lo === undefined || hi === undefined) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    return [lo, hi + (hi - lo) * 0.01];  // a little room: a point or marker at the end shows whole
  }

  function niceTop(max) {
    if (!(max > 0) || !isFinite(max)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(max)));
    var steps = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) if (max * 1.04 <= steps[i] * p) return steps[i] * p;
    return 10 * p;
  }

  // ---- a chart: the figure element, the uPlot instance and its legend ----

  function frame(root, spec) {
    while (root.firstChild) root.removeChild(root.firstChild);
    root.classList.add("lg-chart");
    if (spec.id && !root.id) root.id = spec.id;
    var parts = {
      title: el("div", "lg-title", spec.title || ""),
      plot: el("div", "lg-plot"),
      readout: el("div", "lg-readout", "\u00a0"),
      legend: el("div", "lg-legend"),
      note: el("div", "lg-note", spec.note || "")
    };
    parts.legend.setAttribute("role", "list");
    root.appendChild(parts.title);
    root.appendChild(parts.plot);
    root.appendChild(parts.readout);
    root.appendChild(parts.legend);
    root.appendChild(parts.note);
    parts.note.hidden = !spec.note;
    return parts;
  }

  function width(root) {
    return Math.max(240, Math.floor(root.clientWidth || root.getBoundingClientRect().width || 900));
  }

  function hasValues(spec) {
    return (spec.series || []).some(function (s) {
      return (s.values || []).some(function (v) { return v !== null && isFinite(v); });
    });
  }

  // a value with no value beside it draws no line: such a series shows its points
  function isolated(values) {
    values = values || [];
    function has(i) { return values[i] !== null && values[i] !== undefined && isFinite(values[i]); }
    for (var i = 0; i < values.length; i++) {
      if (has(i) && !has(i - 1) && !has(i + 1)) return true;
    }
    return false;
  }

  function readoutText(spec, u, idx) {
    if (idx === null || idx === undefined) return "\u00a0";
    var x = u.data[0][idx];
    var parts = [fmtX(spec, x)];
    (spec.series || []).forEach(function (s, i) {
      parts.push(s.label + " " + fmtNumber(u.data[i + 1][idx]));
    });
    var span = (u.scales.x.max - u.scales.x.min) / 80;
    (spec.markers || []).forEach(function (m) {
      if (Math.abs(m.x - x) <= span) parts.push(m.label || m.kind);
    });
    (spec.bands || []).forEach(function (b) {
      if (x >= b.from && x <= b.to) parts.push(b.label || b.kind);
    });
    return parts.join(" \u00b7 ");
  }

  function stripReadout(spec, u) {
    var left = u.cursor.left, top = u.cursor.top;
    if (left === undefined || left < 0) return "\u00a0";
    var x = u.posToVal(left, "x"), y = u.posToVal(top, "y");
    var n = Math.max(spec.partitions || 0, 1);
    var p = n - 1 - Math.floor(y);
    var parts = [fmtX(spec, x)];
    (spec.bars || []).forEach(function (b) {
      if (b.partition === p && x >= b.from && x <= b.to) parts.push(b.label || b.owner);
    });
    (spec.overlaps || []).forEach(function (o) {
      if (o.partition === p && x >= o.from && x <= o.to) parts.push(o.label || "overlap");
    });
    return parts.join(" \u00b7 ");
  }

  // `cur.spec` is read at every draw: an update in place swaps it and redraws
  function baseOpts(cur, root, hooks) {
    var spec = cur.spec;
    return {
      width: width(root),
      height: spec.height || 220,
      legend: { show: false },
      cursor: spec.sync ? { sync: { key: spec.sync }, drag: { x: false, y: false } }
        : { drag: { x: false, y: false } },
      scales: { x: { time: false, range: function () { return xRange(cur.spec); } } },
      hooks: hooks
    };
  }

  function showEmpty(parts, text) {
    var old = parts.plot.querySelector(".lg-empty");
    if (old) old.remove();
    if (text) parts.plot.appendChild(el("div", "lg-empty", text));
  }

  function showNote(parts, note) {
    parts.note.textContent = note || "";
    parts.note.hidden = !note;
  }

  // what a chart must keep to be updated in place (else it is drawn anew)
  function shape(spec) {
    return JSON.stringify([spec.type || "timeseries", spec.xKind, spec.unit, spec.height,
      spec.markerLabels, (spec.series || []).map(function (s) {
        return [s.label, !!s.total, s.color || "", s.dash || []];
      })]);
  }

  function timeseries(root, spec) {
    var cur = { spec: spec };
    var parts = frame(root, spec);
    var colors = seriesColors(spec.series || []);
    var lines = (spec.series || []).length > 0;
    var opts = baseOpts(cur, root, {
      drawClear: [function (u) { drawBands(u, cur.spec); }],
      draw: [function (u) { drawMarkers(u, cur.spec); }],
      setCursor: [function (u) {
        parts.readout.textContent = readoutText(cur.spec, u, u.cursor.idx);
      }]
    });
    opts.series = [{}].concat((spec.series || []).map(function (s, i) {
      return { label: s.label, stroke: colors[i], width: s.total ? 2.6 : 1.6, dash: s.dash,
        spanGaps: false, points: { show: function () {
          return isolated((cur.spec.series[i] || {}).values);
        }, size: 6, fill: colors[i] } };
    }));
    if (!lines) opts.series.push({ show: false });  // markers only: keeps the y scale
    opts.scales.y = { range: function (u, min, max) {
      return [Math.min(0, min || 0), niceTop(max)];
    } };
    opts.axes = [xAxis(spec), { font: FONT, label: spec.unit || "", labelSize: 18,
      labelFont: FONT, size: lines ? axisSize : 48, grid: { show: lines }, ticks: { show: lines },
      values: function (u, s) { return s.map(function (v) { return lines ? fmtNumber(v) : ""; }); }
    }];
    function data(sp) {
      var xs = sp.x || [];
      return [xs].concat(lines ? sp.series.map(function (s) { return s.values; })
        : [xs.map(function () { return null; })]);
    }
    function show(sp) {
      parts.title.textContent = sp.title || "";
      while (parts.legend.firstChild) parts.legend.removeChild(parts.legend.firstChild);
      legendEntries(sp, parts.legend, colors);
      showNote(parts, sp.note);
      // no line with a value (or, for a chart of markers only, no marker): say so on the plot
      var empty = lines ? !hasValues(sp) : !(sp.markers || []).length;
      showEmpty(parts, empty ? sp.empty || "no data" : "");
    }
    show(spec);
    var plot = new uPlot(opts, data(spec), parts.plot);
    return { plot: plot, parts: parts, refresh: function (next) {
      if (shape(next) !== shape(cur.spec)) return false;
      cur.spec = next;
      show(next);
      plot.setData(data(next));
      return true;
    } };
  }

  function strip(root, spec) {
    var parts = frame(root, spec);
    var owners = {};
    (spec.owners || []).forEach(function (o, i) {
      owners[o.name] = { color: o.color || PALETTE[i % PALETTE.length] };
      parts.legend.appendChild(legendItem("owner", owners[o.name], o.name));
    });
    if ((spec.bars || []).some(function (b) { return b.state === "owned"; })) {
      parts.legend.appendChild(legendItem("owner", { color: "#777", opacity: 0.35 },
        "pale: owned, not consuming"));
    }
    if ((spec.overlaps || []).length) {
      parts.legend.appendChild(legendItem("overlap", {}, "two owners at once (overlap)"));
    }
    legendEntries({ markers: spec.markers, bands: spec.bands, markerStyles: spec.markerStyles,
      bandStyles: spec.bandStyles }, parts.legend, []);
    var n = Math.max(spec.partitions || 0, 1);
    var labels = spec.rows || Array.from({ length: n }, function (_, p) { return "p" + p; });
    var every = Math.max(1, Math.ceil(n / 24));
    var opts = baseOpts({ spec: spec }, root, {
      drawClear: [function (u) { drawBands(u, spec); }],
      draw: [function (u) { drawStrip(u, spec, owners); drawMarkers(u, spec); }],
      setCursor: [function (u) { parts.readout.textContent = stripReadout(spec, u); }]
    });
    opts.height = spec.height || Math.max(90, Math.min(16, 320 / n) * n + 40);
    opts.series = [{}, { show: false }];
    opts.scales.y = { range: function () { return [0, n]; } };
    opts.axes = [xAxis(spec), { font: FONT, size: axisSize, grid: { show: false },
      ticks: { show: false },
      splits: function () {
        var out = [];
        for (var p = 0; p < n; p += every) out.push(n - p - 0.5);
        return out;
      },
      values: function (u, splits) {
        return splits.map(function (s) { return labels[n - 0.5 - s] || ""; });
      } }];
    var range = xRange(spec);
    var plot = new uPlot(opts, [[range[0], range[1]], [null, null]], parts.plot);
    if (!(spec.bars || []).length) parts.plot.appendChild(el("div", "lg-empty", "no partition was owned"));
    return { plot: plot, parts: parts };
  }

  function bars(root, spec) {
    var parts = frame(root, spec);
    parts.plot.classList.add("lg-bars");
    var series = spec.series || [];
    var colors = seriesColors(series);
    var top = 0;
    series.forEach(function (s) { (s.values || []).forEach(function (v) {
      if (v !== null && isFinite(v)) top = Math.max(top, Math.abs(v));
    }); });
    if (spec.better) {
      parts.title.appendChild(el("span", "lg-better", " (" + spec.better + " is better)"));
    }
    (spec.categories || []).forEach(function (cat, ci) {
      var row = el("div", "lg-bar-row");
      row.appendChild(el("div", "lg-bar-label", cat));
      var cell = el("div", "lg-bar-cell");
      series.forEach(function (s, si) {
        var v = (s.values || [])[ci];
        var line = el("div", "lg-bar-line");
        var track = el("div", "lg-bar-track");
        var bar = el("div", "lg-bar");
        bar.style.width = (v !== null && isFinite(v) && top > 0 ? (100 * Math.abs(v) / top) : 0) + "%";
        bar.style.backgroundColor = colors[si];
        if (v === null || !isFinite(v) || v === 0) bar.style.minWidth = "0";
        track.appendChild(bar);
        line.appendChild(track);
        line.appendChild(el("span", "lg-bar-value",
          fmtNumber(v) + (v !== null && isFinite(v) && spec.unit ? " " + spec.unit : "")));
        cell.appendChild(line);
      });
      row.appendChild(cell);
      parts.plot.appendChild(row);
    });
    if (series.length > 1) {
      series.forEach(function (s, i) {
        parts.legend.appendChild(legendItem("owner", { color: colors[i] }, s.label));
      });
    }
    parts.readout.remove();
    return { plot: null, parts: parts };
  }

  var KINDS = { timeseries: timeseries, strip: strip, bars: bars };

  function box(r) {
    return r ? { left: r.left + scrollX, top: r.top + scrollY, right: r.right + scrollX,
      bottom: r.bottom + scrollY } : null;
  }

  function mount(root, spec) {
    var kind = KINDS[spec.type || "timeseries"];
    if (!kind) throw new Error("lagless charts: unknown chart type " + String(spec.type));
    var state = kind(root, spec);
    var observer = null;
    if (state.plot && typeof ResizeObserver !== "undefined") {
      var last = width(root);
      observer = new ResizeObserver(function () {
        var w = width(root);
        if (state.plot && Math.abs(w - last) > 2) {
          last = w;
          state.plot.setSize({ width: w, height: state.plot.height });
        }
      });
      observer.observe(root);
    }
    return {
      update: function (next) {
        if (state.refresh && (next.type || "timeseries") === (spec.type || "timeseries") &&
            state.refresh(next)) {
          spec = next;
          return;
        }
        if (state.plot) state.plot.destroy();
        spec = next;
        kind = KINDS[next.type || "timeseries"];
        state = kind(root, next);
      },
      uplot: function () { return state.plot; },
      destroy: function () {
        if (observer) observer.disconnect();
        if (state.plot) state.plot.destroy();
        while (root.firstChild) root.removeChild(root.firstChild);
      },
      layout: function () {
        var legend = box(state.parts.legend.getBoundingClientRect());
        if (!state.plot) return { plot: box(state.parts.plot.getBoundingClientRect()),
          xAxis: null, yAxis: null, legend: legend };
        var over = state.plot.over.getBoundingClientRect();
        var wrap = state.plot.root.querySelector(".u-wrap").getBoundingClientRect();
        return {
          plot: box(over),
          xAxis: box({ left: wrap.left, right: wrap.right, top: over.bottom, bottom: wrap.bottom }),
          yAxis: box({ left: wrap.left, right: over.left, top: wrap.top, bottom: wrap.bottom }),
          legend: legend
        };
      }
    };
  }

  var handles = {};

  function mountAll(root) {
    root = root || document;
    var out = [];
    root.querySelectorAll("[data-lg-spec]").forEach(function (node) {
      var source = document.getElementById(node.getAttribute("data-lg-spec"));
      if (!source) return;
      var spec = JSON.parse(source.textContent);
      var handle = mount(node, spec);
      if (node.id) handles[node.id] = handle;
      out.push(handle);
    });
    return out;
  }

  global.LaglessCharts = {
    mount: mount,
    mountAll: mountAll,
    handle: function (id) { return handles[id] || null; },
    format: { number: fmtNumber, elapsed: fmtElapsed },
    PALETTE: PALETTE,
    TOTAL_COLOR: TOTAL_COLOR,
    OVERLAP_COLOR: OVERLAP_COLOR,
    MARKER_STYLES: MARKER_STYLES,
    BAND_STYLES: BAND_STYLES
  };
})(window);
