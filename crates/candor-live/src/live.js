// candor live page: follows /events (one JSON object per interval) and redraws the charts on each.
// It marks the root element with data-events (events taken), data-redraws (chart updates),
// data-charts-drawn / data-charts-expected (charts with painted pixels) and data-done, so that
// automated checks can see it really worked.
(function () {
  "use strict";
  var root = document.documentElement;
  function fail(msg) {
    window.__candorErrors.push(msg);
    root.setAttribute("data-js-error", window.__candorErrors.join(" | "));
  }
  function $(id) { return document.getElementById(id); }

  function fmtNs(ns) {
    if (ns == null || !isFinite(ns)) return "\u2014";
    if (ns < 1e3) return ns.toFixed(0) + " ns";
    if (ns < 1e6) return (ns / 1e3).toPrecision(3) + " \u00b5s";
    if (ns < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
    return (ns / 1e9).toPrecision(3) + " s";
  }
  function fmtMs(ms) { return ms == null ? "\u2014" : fmtNs(ms * 1e6); }
  function fmtRate(r) {
    if (r == null || !isFinite(r)) return "\u2014";
    if (r >= 1e6) return (r / 1e6).toPrecision(3) + "M";
    if (r >= 1e3) return (r / 1e3).toPrecision(3) + "k";
    return r.toPrecision(3);
  }
  function fmtCount(n) { return n == null ? "\u2014" : String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function pctLabel(x) {
    var p = 100 * (1 - 1 / x);
    var s = p.toFixed(5).replace(/0+$/, "").replace(/\.$/, "");
    return s + "%";
  }
  // uPlot passes null for ticks it leaves unlabelled to avoid crowding.
  function tick(f) { return function (v) { return v == null ? "" : f(v); }; }
  // One tick per decade: log axes stay readable at any zoom.
  function decades(u, axisIdx, min, max) {
    var out = [];
    for (var e = Math.round(Math.log10(min)); Math.pow(10, e) <= max * (1 + 1e-9); e++) out.push(Math.pow(10, e));
    return out;
  }
  function logRange(u, min, max) {
    if (!(min > 0)) min = 1e-3;
    if (!(max > min)) max = min * 10;
    return [Math.pow(10, Math.floor(Math.log10(min))), Math.pow(10, Math.ceil(Math.log10(max)))];
  }

  // Columns of the time charts, one entry per interval.
  var T = { t: [], target: [], achieved: [], p50: [], p90: [], p99: [], p999: [], max: [], sp99: [],
    lag50: [], lag99: [], lagmax: [], connect: [], read: [], write: [], timeout: [], parse: [], status: [], check: [], inflight: [] };
  var lastFailures = null;
  var closedLoop = false;
  var run = null;
  var spectrum = [[1], [null]];
  var charts = {};
  var events = 0, redraws = 0;
  var classes = ["connect", "read", "write", "timeout", "parse", "status", "check"];
  // The failures chart's data: time, one series per class, in flight.
  function failureData() {
    return [T.t].concat(classes.map(function (c) { return T[c]; })).concat([T.inflight]);
  }

  function width(el) { return Math.max(320, el.clientWidth || el.parentNode.clientWidth || 560); }
  function axis(o) { o.stroke = "#5b6575"; o.grid = o.grid || { stroke: "#eceef1" }; return o; }
  function sec(u, v) { return v == null ? "\u2014" : v.toFixed(1) + " s"; }
  function msVal(u, v) { return fmtMs(v); }

  function make(id, opts, data) {
    var el = $(id);
    opts.width = width(el);
    opts.height = 240;
    opts.legend = { live: true };
    opts.cursor = { drag: { x: false, y: false } };
    charts[id] = new uPlot(opts, data, el);
  }

  function build() {
    var pts = { size: 3 };
    make("c-rate", {
      scales: { x: { time: false }, y: { range: function (u, min, max) { return [0, Math.max(1, max) * 1.15]; } } },
      axes: [axis({ label: "elapsed (s)" }), axis({ label: "requests/s", size: 64, values: function (u, s) { return s.map(tick(fmtRate)); } })],
      series: [{ label: "t", value: sec },
        { label: "target", stroke: "#5b6575", dash: [5, 4], width: 1.5, points: { show: false }, value: function (u, v) { return closedLoop ? "closed loop" : v == null ? "\u2014" : fmtRate(v) + "/s"; } },
        { label: "achieved", stroke: "#1f6fb2", width: 2, fill: "#1f6fb222", points: pts, value: function (u, v) { return v == null ? "\u2014" : fmtRate(v) + "/s"; } }],
    }, [T.t, T.target, T.achieved]);
    var latAxis = axis({ label: "latency", size: 72, splits: decades, values: function (u, s) { return s.map(tick(fmtMs)); } });
    make("c-latency", {
      scales: { x: { time: false }, y: { distr: 3, log: 10, range: logRange } },
      axes: [axis({ label: "elapsed (s)" }), latAxis],
      series: [{ label: "t", value: sec },
        { label: "p50", stroke: "#2a9d5c", width: 1.5, points: pts, value: msVal },
        { label: "p90", stroke: "#3b8ea5", width: 1.5, points: pts, value: msVal },
        { label: "p99", stroke: "#1f6fb2", width: 2, points: pts, value: msVal },
        { label: "p99.9", stroke: "#8e5cc2", width: 1.5, points: pts, value: msVal },
        { label: "max", stroke: "#d1495b", width: 1.5, points: pts, value: msVal },
        { label: "service p99", stroke: "#e08a1e", width: 1.5, dash: [4, 3], points: pts, value: msVal }],
    }, [T.t, T.p50, T.p90, T.p99, T.p999, T.max, T.sp99]);
    make("c-lag", {
      scales: { x: { time: false }, y: { distr: 3, log: 10, range: logRange } },
      axes: [axis({ label: "elapsed (s)" }), axis({ label: "send lag", size: 72, splits: decades, values: function (u, s) { return s.map(tick(fmtMs)); } })],
      series: [{ label: "t", value: sec },
        { label: "p50", stroke: "#2a9d5c", width: 1.5, points: pts, value: msVal },
        { label: "p99", stroke: "#1f6fb2", width: 2, points: pts, value: msVal },
        { label: "max", stroke: "#d1495b", width: 1.5, points: pts, value: msVal }],
    }, [T.t, T.lag50, T.lag99, T.lagmax]);
    var colors = { connect: "#b42318", read: "#e08a1e", write: "#8e5cc2", timeout: "#d1495b", parse: "#7a7a7a", status: "#2a9d8f", check: "#264653" };
    var fs = [{ label: "t", value: sec }];
    classes.forEach(function (c) { fs.push({ label: c, stroke: colors[c], width: 1.5, points: pts, scale: "n" }); });
    fs.push({ label: "in flight", stroke: "#1f6fb2", width: 2, dash: [5, 3], points: { show: false }, scale: "f" });
    make("c-failures", {
      scales: { x: { time: false }, n: { range: function (u, min, max) { return [0, Math.max(1, max)]; } }, f: { range: function (u, min, max) { return [0, Math.max(1, max)]; } } },
      axes: [axis({ label: "elapsed (s)" }), axis({ scale: "n", label: "failures / interval", size: 64 }),
        axis({ scale: "f", side: 1, label: "in flight", size: 64, grid: { show: false } })],
      series: fs,
    }, failureData());
    make("c-spectrum", {
      scales: { x: { time: false, distr: 3, log: 10, range: function (u, min, max) { return [1, Math.max(10, Math.pow(10, Math.ceil(Math.log10(max || 10))))]; } }, y: { distr: 3, log: 10, range: logRange } },
      axes: [axis({ label: "percentile (log of 1/(1\u2212p))", splits: decades, values: function (u, s) { return s.map(tick(pctLabel)); } }),
        axis({ label: "response time", size: 72, splits: decades, values: function (u, s) { return s.map(tick(fmtMs)); } })],
      series: [{ label: "percentile", value: function (u, v) { return v == null ? "\u2014" : pctLabel(v); } },
        { label: "response time", stroke: "#1f6fb2", width: 2, points: { size: 5 }, value: msVal }],
    }, spectrum);
  }

  function redraw() {
    charts["c-rate"].setData([T.t, T.target, T.achieved]);
    charts["c-latency"].setData([T.t, T.p50, T.p90, T.p99, T.p999, T.max, T.sp99]);
    charts["c-lag"].setData([T.t, T.lag50, T.lag99, T.lagmax]);
    charts["c-failures"].setData(failureData());
    charts["c-spectrum"].setData(spectrum);
    redraws++;
    root.setAttribute("data-redraws", String(redraws));
    check();
  }

  // A log axis cannot show 0: an empty measure is a gap, not a point.
  function ms(ns, count) { return count > 0 && ns > 0 ? ns / 1e6 : null; }

  function setSpectrum(e) {
    var xs = [], ys = [];
    (e.spectrum || []).forEach(function (pt) {
      var x = 1 / (1 - pt[0] / 100);
      if (pt[1] > 0) { xs.push(x); ys.push(pt[1] / 1e6); }
    });
    if (xs.length) spectrum = [xs, ys];
    $("spectrum-max").textContent = e.spectrum_max_ns ? "(max " + fmtNs(e.spectrum_max_ns) + ")" : "";
  }

  function facts(e) {
    var r = e.requests;
    $("requests").textContent = fmtCount(r.completed) + " completed of " + fmtCount(r.intended) + " intended";
    $("inflight").textContent = fmtCount(r.in_flight);
    var f = e.failures, parts = [];
    classes.forEach(function (c) { if (f[c]) parts.push(c + " " + fmtCount(f[c])); });
    $("failures").textContent = r.failed ? fmtCount(r.failed) + " (" + parts.join(", ") + ")" : "none";
    var codes = e.status_codes || {}, cs = [];
    Object.keys(codes).sort().forEach(function (k) { cs.push(k + " \u00d7" + fmtCount(codes[k])); });
    $("codes").textContent = cs.length ? cs.join("  ") : "none";
    $("rate").textContent = fmtRate(e.achieved_per_s) + "/s achieved" + (e.target_per_s == null ? " (closed loop)" : " of " + fmtRate(e.target_per_s) + "/s target");
    $("elapsed").textContent = e.elapsed_s.toFixed(1) + " s of " + e.total_s.toFixed(0) + " s";
    $("progress").style.width = Math.min(100, 100 * e.elapsed_s / Math.max(e.total_s, 1e-9)) + "%";
    var w = $("warnings");
    w.textContent = "";
    (e.warnings || []).forEach(function (text) {
      var d = document.createElement("div");
      d.textContent = "\u26a0 " + text;
      w.appendChild(d);
    });
    w.hidden = !(e.warnings && e.warnings.length);
  }

  // A sweep or capacity search runs one test after another: each starts fresh charts.
  function reset() {
    Object.keys(T).forEach(function (k) { T[k].length = 0; });
    lastFailures = null;
    spectrum = [[1], [null]];
    root.removeAttribute("data-done");
  }

  function take(e) {
    if (run !== null && e.run !== run) reset();
    run = e.run;
    if (e.label) $("label").textContent = e.label;
    events++;
    root.setAttribute("data-events", String(events));
    root.setAttribute("data-last-elapsed", String(e.elapsed_s));
    var st = $("status");
    if (e.done) {
      var s = e.summary.response_time;
      st.textContent = (e.stopped_early ? "Run stopped early" : e.last ? "Run finished" : "Run " + e.run + " finished") + ": p50 " + fmtNs(s.p50_ns) + ", p99 " + fmtNs(s.p99_ns) + ", p99.9 " + fmtNs(s.p999_ns) + ", max " + fmtNs(s.max_ns) + " (final picture)";
      st.className = "status done";
      root.setAttribute("data-done", "1");
      facts(e);
      setSpectrum(e);
      redraw();
      return;
    }
    st.textContent = e.warmup ? "Running: warm-up (not in the measured results)" : "Running";
    st.className = e.warmup ? "status warmup" : "status";
    closedLoop = e.target_per_s == null;
    T.t.push(e.elapsed_s);
    T.target.push(e.target_per_s);
    T.achieved.push(e.achieved_per_s);
    var rt = e.response_time, sv = e.service_time, lg = e.send_lag;
    T.p50.push(ms(rt.p50_ns, rt.count)); T.p90.push(ms(rt.p90_ns, rt.count)); T.p99.push(ms(rt.p99_ns, rt.count));
    T.p999.push(ms(rt.p999_ns, rt.count)); T.max.push(ms(rt.max_ns, rt.count)); T.sp99.push(ms(sv.p99_ns, sv.count));
    T.lag50.push(ms(lg.p50_ns, lg.count)); T.lag99.push(ms(lg.p99_ns, lg.count)); T.lagmax.push(ms(lg.max_ns, lg.count));
    // The stream carries cumulative failures; the chart shows each interval's share. A warm-up
    // interval has none of the measured window's.
    classes.forEach(function (c) {
      var now = e.failures[c] || 0;
      T[c].push(lastFailures ? Math.max(0, now - (lastFailures[c] || 0)) : now);
    });
    lastFailures = e.failures;
    T.inflight.push(e.requests.in_flight);
    facts(e);
    setSpectrum(e);
    redraw();
  }

  // True when the chart's canvas has enough painted pixels to be a real plot.
  function painted(u) {
    try {
      var c = u.ctx.canvas;
      var img = u.ctx.getImageData(0, 0, c.width, c.height).data;
      var n = 0;
      for (var i = 3; i < img.length; i += 16) if (img[i] > 0) n++;
      return n > 200;
    } catch (err) {
      fail("canvas check: " + err);
      return false;
    }
  }
  function check() {
    var all = Object.keys(charts).map(function (k) { return charts[k]; });
    root.setAttribute("data-charts-expected", String(all.length));
    root.setAttribute("data-charts-drawn", String(all.filter(painted).length));
  }

  try {
    build();
  } catch (err) {
    fail("building charts: " + err);
    return;
  }
  var es = new EventSource("/events");
  var lastId = -1;
  es.onmessage = function (m) {
    // After a reconnect the server sends its kept events again; take each one once.
    var id = Number(m.lastEventId);
    if (m.lastEventId !== "" && id <= lastId) return;
    lastId = id;
    try {
      var e = JSON.parse(m.data);
      take(e);
      // The last run is over: keep the final picture, do not reconnect.
      if (e.done && e.last) es.close();
    } catch (err) {
      fail("event: " + err);
    }
  };
  es.onerror = function () {
    // After a finished run, candor going away is the end, not a failure: keep the picture.
    if (root.getAttribute("data-done") === "1") { es.close(); return; }
    var st = $("status");
    st.textContent = "Connection to candor lost (the run may have ended); showing the last picture";
    st.className = "status lost";
  };
  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (k) {
      charts[k].setSize({ width: width($(k)), height: 240 });
    });
  });
})();
