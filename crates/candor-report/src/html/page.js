// candor report charts (uPlot). Reads the JSON data block, draws every chart, then marks the page
// with data-charts-drawn / data-charts-expected so automated checks know the charts really drew.
(function () {
  "use strict";
  var root = document.documentElement;
  function fail(msg) {
    window.__candorErrors = window.__candorErrors || [];
    window.__candorErrors.push(String(msg));
    root.setAttribute("data-js-error", window.__candorErrors.join(" | "));
  }
  var D;
  try {
    D = JSON.parse(document.getElementById("candor-data").textContent);
  } catch (e) {
    fail("report data: " + e);
    return;
  }

  function trim(s) {
    return s.indexOf(".") >= 0 ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
  }
  var UNITS = [[1e9, "s"], [1e6, "ms"], [1e3, "\u00b5s"], [1, "ns"]];
  function unitFor(v) {
    var a = Math.abs(v);
    for (var i = 0; i < UNITS.length; i++) if (a >= UNITS[i][0]) return UNITS[i];
    return UNITS[UNITS.length - 1];
  }
  // Axis ticks: short, trailing zeros dropped ("2 ms", "500 µs").
  function fmtAxis(v) {
    if (v == null) return "";
    var u = unitFor(v), x = v / u[0];
    return trim(x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)) + " " + u[1];
  }
  // Values: four significant figures.
  function fmtNs(v) {
    if (v == null) return "\u2014";
    var u = unitFor(v), x = v / u[0];
    if (u[1] === "ns") return Math.round(v) + " ns";
    return x.toFixed(x >= 100 ? 1 : x >= 10 ? 2 : 3) + " " + u[1];
  }
  function fmtRate(v) {
    if (v == null) return "";
    if (v >= 1e6) return trim((v / 1e6).toFixed(2)) + "M";
    if (v >= 1e3) return trim((v / 1e3).toFixed(2)) + "k";
    return trim(v.toFixed(1));
  }
  // x on the 1/(1-p) axis to a percentile label: 10 -> 90%, 1000 -> 99.9%.
  function pctLabel(x) {
    if (x == null) return "\u2014";
    var k = Math.log10(x);
    if (Math.abs(k - Math.round(k)) < 1e-9) {
      k = Math.round(k);
      if (k === 0) return "0%";
      if (k === 1) return "90%";
      return "99" + (k > 2 ? "." + "9".repeat(k - 2) : "") + "%";
    }
    var p = 100 * (1 - 1 / x);
    var d = Math.max(0, Math.ceil(k) - 1);
    return trim(p.toFixed(d)) + "%";
  }
  function decadeSplits(min, max) {
    var out = [];
    for (var e = Math.floor(Math.log10(min) + 1e-9); Math.pow(10, e) <= max * (1 + 1e-9); e++) {
      var v = Math.pow(10, e);
      if (v >= min * (1 - 1e-9)) out.push(v);
    }
    return out;
  }
  // 1-2-5 ticks per decade when the range is narrow, decades only when it is wide.
  function logSplits(u, axisIdx, min, max) {
    var decades = Math.log10(max / min);
    var mult = decades > 4 ? [1] : decades > 2 ? [1, 3] : [1, 2, 5];
    var out = [];
    for (var e = Math.floor(Math.log10(min)) - 1; Math.pow(10, e) <= max; e++) {
      for (var i = 0; i < mult.length; i++) {
        var v = mult[i] * Math.pow(10, e);
        if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
      }
    }
    return out;
  }
  function logRange(u, min, max) {
    if (min == null || max == null || !(min > 0)) return [1, 10];
    return [Math.pow(10, Math.floor(Math.log10(min))), Math.pow(10, Math.ceil(Math.log10(max)))];
  }
  function widthOf(el) {
    return Math.max(320, el.clientWidth - 18);
  }
  var AXIS = { stroke: "#5b6575", grid: { stroke: "#eceff3", width: 1 }, ticks: { stroke: "#d5dae2", width: 1 }, font: "12px sans-serif", labelFont: "600 12px sans-serif" };
  function axis(extra) {
    var a = {};
    for (var k in AXIS) a[k] = AXIS[k];
    for (var k2 in extra) a[k2] = extra[k2];
    return a;
  }

  var charts = [];
  var timeCharts = [];
  var expected = 0;

  // A legend's sample is the line as drawn, solid or dashed: uPlot draws the same square for
  // both. Series drawn as bars (legendSquare) keep the square; the CSS of .line-sample turns the
  // marker's top border into the line.
  function legendSamples(opts) {
    opts.series.forEach(function (s, i) {
      if (i == 0 || s.legendSquare) return;
      s.class = (s.class ? s.class + " " : "") + "line-sample";
    });
    opts.legend = opts.legend || {};
    opts.legend.markers = opts.legend.markers || {};
    opts.legend.markers.dash = function (u, i) { return u.series[i].dash ? "dashed" : "solid"; };
  }

  function make(el, opts, data) {
    expected++;
    legendSamples(opts);
    opts.width = widthOf(el);
    var u = new uPlot(opts, data, el);
    charts.push(u);
    return u;
  }

  // ---- percentile spectrum ----
  function spectrum() {
    var el = document.getElementById("spectrum");
    if (!el) return;
    var xs = D.xs;
    var data = [xs];
    // Legends read without hovering: with no cursor each series shows its p99 and max, and the
    // percentile column says so; hovering shows the values at the cursor.
    var series = [{ label: "percentile", value: function (u, v) { return v == null ? "p99 \u00b7 max" : pctLabel(v); } }];
    D.runs.forEach(function (r) {
      data.push(r.spectrum.response);
      series.push({ label: r.label + " \u00b7 response", stroke: r.color, width: 2.25, value: function (u, v) { return v == null ? r.spectrum.legend_response : fmtNs(v); }, points: { show: false } });
      data.push(r.spectrum.service);
      series.push({ label: r.label + " \u00b7 service", stroke: r.color, width: 1.5, dash: [7, 5], value: function (u, v) { return v == null ? r.spectrum.legend_service : fmtNs(v); }, points: { show: false } });
    });
    var maxX = xs[xs.length - 1];
    var opts = {
      height: 430,
      scales: {
        x: { time: false, distr: 3, log: 10, range: [1, maxX] },
        y: { distr: 3, log: 10, range: logRange },
      },
      axes: [
        axis({ label: "percentile (log of 1/(1\u2212p))", splits: function () { return decadeSplits(1, maxX); }, values: function (u, s) { return s.map(pctLabel); } }),
        axis({ label: "latency", size: 78, splits: logSplits, values: function (u, s) { return s.map(fmtAxis); } }),
      ],
      series: series,
      cursor: { drag: { x: true, y: false } },
      hooks: { draw: [drawSlos] },
    };
    make(el, opts, data);
  }

  function drawSlos(u) {
    if (!D.slos || !D.slos.length) return;
    var ctx = u.ctx;
    ctx.save();
    D.slos.forEach(function (s) {
      var p = Math.min(s.percentile, 99.9999999);
      var xv = Math.min(1 / (1 - p / 100), u.scales.x.max);
      var x = u.valToPos(xv, "x", true);
      var x0 = u.valToPos(u.scales.x.min, "x", true);
      var y = u.valToPos(s.threshold_ns, "y", true);
      ctx.strokeStyle = "#b42318";
      ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      ctx.beginPath();
      ctx.moveTo(x0, y);
      ctx.lineTo(x, y);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#b42318";
      ctx.beginPath();
      ctx.arc(x, y, 3.5 * devicePixelRatio, 0, 2 * Math.PI);
      ctx.fill();
      ctx.font = "600 " + 11 * devicePixelRatio + "px sans-serif";
      ctx.textAlign = "left";
      ctx.fillText("SLO " + s.label + ": p" + s.percentile + " \u2264 " + fmtAxis(s.threshold_ns), x0 + 6 * devicePixelRatio, y - 5 * devicePixelRatio);
    });
    ctx.restore();
  }

  // Marked moments (an injected pause, ...) as labelled red bands on the time axes.
  function eventBands(run, u) {
    var evs = run.time.events || [];
    var ctx = u.ctx;
    evs.forEach(function (e) {
      var x0 = u.valToPos(e.at, "x", true);
      var x1 = u.valToPos(e.at + Math.max(e.length, 0), "x", true);
      ctx.save();
      ctx.fillStyle = "rgba(200,40,40,0.12)";
      ctx.fillRect(x0, u.bbox.top, Math.max(2 * devicePixelRatio, x1 - x0), u.bbox.height);
      ctx.fillStyle = "#b02a2a";
      ctx.font = "600 " + 11 * devicePixelRatio + "px sans-serif";
      ctx.fillText(e.kind, x0 + 5 * devicePixelRatio, u.bbox.top + 28 * devicePixelRatio);
      ctx.restore();
    });
  }

  function warmupShade(run) {
    return function (u) {
      eventBands(run, u);
      var end = run.time.warmup_end;
      if (end == null) return;
      var x0 = u.valToPos(Math.max(u.scales.x.min, 0), "x", true);
      var x1 = u.valToPos(Math.min(end, u.scales.x.max), "x", true);
      var ctx = u.ctx;
      ctx.save();
      ctx.fillStyle = "rgba(120,130,150,0.12)";
      ctx.fillRect(x0, u.bbox.top, Math.max(0, x1 - x0), u.bbox.height);
      ctx.fillStyle = "#7a8494";
      ctx.font = 11 * devicePixelRatio + "px sans-serif";
      ctx.fillText("warm-up", x0 + 5 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
      ctx.restore();
    };
  }

  // ---- the load profile on the charts over time ----
  function clipToPlot(u) {
    u.ctx.beginPath();
    u.ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    u.ctx.clip();
  }
  // Stage boundaries: a dashed line at each stage's start and at the last one's end, labelled
  // with the stage's number and target where the label fits before the next boundary.
  function stageMarks(run) {
    var w = run.workload;
    return function (u) {
      if (!w || !w.stages || !w.stages.length) return;
      var ctx = u.ctx, dpr = devicePixelRatio, n = 0;
      var top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
      ctx.save();
      clipToPlot(u);
      ctx.font = "600 " + 11 * dpr + "px sans-serif";
      w.stages.forEach(function (s, k) {
        var x0 = u.valToPos(s.x0, "x", true), x1 = u.valToPos(s.x1, "x", true);
        ctx.strokeStyle = "#5b6575";
        ctx.lineWidth = dpr;
        ctx.setLineDash([3 * dpr, 3 * dpr]);
        ctx.beginPath();
        ctx.moveTo(x0, top);
        ctx.lineTo(x0, bottom);
        n++;
        if (k === w.stages.length - 1) {
          ctx.moveTo(x1, top);
          ctx.lineTo(x1, bottom);
          n++;
        }
        ctx.stroke();
        ctx.setLineDash([]);
        var room = x1 - x0 - 8 * dpr;
        var long = "stage " + (k + 1) + " \u00b7 " + s.target, short = String(k + 1);
        var text = ctx.measureText(long).width <= room ? long : ctx.measureText(short).width <= room ? short : null;
        if (text) {
          ctx.fillStyle = "#3d4757";
          ctx.fillText(text, x0 + 4 * dpr, bottom - 6 * dpr);
        }
      });
      ctx.restore();
      u._stageMarks = n;
    };
  }
  // The target rate as the profile intends it: flat for a hold, linear for a ramp, a step where
  // one stage's end rate is not the next one's start, the warm-up at the first stage's rate.
  function targetLine(run) {
    var prof = run.workload && run.workload.profile;
    return function (u) {
      if (!prof || !prof.length) return;
      var ctx = u.ctx, dpr = devicePixelRatio;
      ctx.save();
      clipToPlot(u);
      ctx.strokeStyle = "#5b6575";
      ctx.lineWidth = 1.5 * dpr;
      ctx.setLineDash([5 * dpr, 4 * dpr]);
      ctx.beginPath();
      prof.forEach(function (p, j) {
        var x = u.valToPos(p[0], "x", true), y = u.valToPos(p[1], "rps", true);
        if (j === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      ctx.stroke();
      ctx.restore();
      u._targetCorners = prof.length;
    };
  }

  // ---- latency and throughput over time ----
  // Time axes start at the window's start (the first interval's start, the warm-up's when there
  // is one), not at the first point, which is plotted at its interval's end.
  function xRangeFrom(t0) {
    return function (u, min, max) {
      var lo = t0 == null ? (min == null ? 0 : min) : t0;
      return [lo, max == null || max <= lo ? lo + 1 : max];
    };
  }
  function highest(a) {
    var m = null;
    a.forEach(function (v) { if (v != null && (m == null || v > m)) m = v; });
    return m;
  }
  function total(a) {
    var n = 0;
    a.forEach(function (v) { if (v != null) n += v; });
    return n;
  }
  function mean(a) {
    var n = 0, k = 0;
    a.forEach(function (v) { if (v != null) { n += v; k++; } });
    return k ? n / k : null;
  }
  // Legend value with no cursor: the series' highest interval value.
  function latValue(a) {
    var m = highest(a);
    var idle = m == null ? "no data" : "highest " + fmtNs(m);
    return function (u, v) { return v == null ? idle : fmtNs(v); };
  }
  function overTime(run, i) {
    var t = run.time;
    var xRange = xRangeFrom(t.t0);
    var pts = { show: t.t.length <= 60, size: 4 };
    var el = document.getElementById("lat-" + i);
    if (el && t.t.length) {
      var lat = {
        height: 300,
        title: "Response time per interval",
        scales: { x: { time: false, range: xRange }, y: { distr: 3, log: 10, range: logRange } },
        axes: [
          axis({ label: "seconds since start" }),
          axis({ label: "latency", size: 78, splits: logSplits, values: function (u, s) { return s.map(fmtAxis); } }),
        ],
        series: [
          { label: "t (s)", value: function (u, v) { return v == null ? "all intervals" : v.toFixed(1) + " s"; } },
          { label: "p50", points: pts, stroke: "#2a9d5c", width: 1.75, value: latValue(t.p50) },
          { label: "p99", points: pts, stroke: "#1f6fb2", width: 1.75, value: latValue(t.p99) },
          { label: "p99.9", points: pts, stroke: "#8e5cc2", width: 1.75, value: latValue(t.p999) },
          { label: "max", points: pts, stroke: "#d1495b", width: 1.75, value: latValue(t.max) },
          { label: "service p99", points: pts, stroke: "#8a94a6", width: 1.25, dash: [6, 4], value: latValue(t.svc_p99) },
        ],
        hooks: { drawAxes: [warmupShade(run), stageMarks(run)] },
      };
      timeCharts.push([make(el, lat, [t.t, t.p50, t.p99, t.p999, t.max, t.svc_p99]), t.t0]);
    }
    var el2 = document.getElementById("rate-" + i);
    if (el2 && t.t.length) {
      // With a load profile the target series holds the profile's mean over each interval (for the
      // legend and the scale) and the line drawn is the profile itself; else one flat rate.
      var prof = run.workload && run.workload.profile && run.workload.profile.length ? run.workload : null;
      var target = prof ? prof.target_mean : t.t.map(function () { return t.target; });
      var profMax = prof ? highest(prof.profile.map(function (p) { return p[1]; })) : 0;
      var targetSeries = prof
        ? { label: "target", points: { show: false }, scale: "rps", stroke: "#5b6575", width: 1.25, dash: [5, 4], paths: function () { return null; }, value: function (u, v) { return v == null ? "load profile" : fmtRate(v) + "/s"; } }
        : { label: "target", points: { show: false }, scale: "rps", stroke: "#5b6575", width: 1.25, dash: [5, 4], value: function (u, v) { return t.target == null ? "none" : fmtRate(t.target) + "/s"; } };
      var bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 24] }) : undefined;
      var rate = {
        height: 210,
        title: "Throughput and failures per interval",
        scales: { x: { time: false, range: xRange }, rps: { range: function (u, min, max) { return [0, Math.max(1, Math.max(max, profMax) * 1.15)]; } }, n: { range: function (u, min, max) { return [0, Math.max(4, max * 1.3)]; } } },
        axes: [
          axis({ label: "seconds since start" }),
          axis({ scale: "rps", label: "requests/s", size: 70, values: function (u, s) { return s.map(fmtRate); } }),
          axis({ scale: "n", side: 1, label: "failures", size: 56, grid: { show: false } }),
        ],
        series: [
          { label: "t (s)", value: function (u, v) { return v == null ? "all intervals" : v.toFixed(1) + " s"; } },
          { label: "achieved", points: pts, scale: "rps", stroke: run.color, width: 2, fill: run.color + "22", value: function (u, v) { var m = mean(t.rate); return v == null ? (m == null ? "no data" : "mean " + fmtRate(m) + "/s") : fmtRate(v) + "/s"; } },
          targetSeries,
          { label: "failed", scale: "n", stroke: "#b42318", fill: "rgba(180,35,24,0.55)", paths: bars, legendSquare: true, points: { show: false }, value: function (u, v) { return v == null ? "total " + total(t.failed) : String(v); } },
        ],
        hooks: { drawAxes: [warmupShade(run), stageMarks(run)], draw: [targetLine(run)] },
      };
      timeCharts.push([make(el2, rate, [t.t, t.rate, target, t.failed]), t.t0]);
    }
  }

  // ---- response-time percentiles by request name, overlaid as the spectrum draws them ----
  function namesOverlay(run, i) {
    var el = document.getElementById("names-" + i);
    var names = run.workload && run.workload.names;
    if (!el || !names || !names.length) return;
    var xs = D.xs, data = [xs], maxX = 1;
    var series = [{ label: "percentile", value: function (u, v) { return v == null ? "p99 \u00b7 max" : pctLabel(v); } }];
    names.forEach(function (n) {
      data.push(n.response);
      for (var j = n.response.length - 1; j >= 0; j--) {
        if (n.response[j] != null) { maxX = Math.max(maxX, xs[j]); break; }
      }
      series.push({ label: n.label, stroke: n.color, width: 2, dash: n.dash || undefined, points: { show: false }, value: function (u, v) { return v == null ? n.legend : fmtNs(v); } });
    });
    if (maxX <= 1) maxX = xs[xs.length - 1];
    make(el, {
      height: 380,
      title: "Response time by request name",
      scales: {
        x: { time: false, distr: 3, log: 10, range: [1, maxX] },
        y: { distr: 3, log: 10, range: logRange },
      },
      axes: [
        axis({ label: "percentile (log of 1/(1\u2212p))", splits: function () { return decadeSplits(1, maxX); }, values: function (u, s) { return s.map(pctLabel); } }),
        axis({ label: "response time", size: 78, splits: logSplits, values: function (u, s) { return s.map(fmtAxis); } }),
      ],
      series: series,
      cursor: { drag: { x: true, y: false } },
    }, data);
  }

  // ---- streamed responses: each measure's spectrum, and output tokens per second over time ----
  function streams(run, i) {
    var st = run.stream;
    if (!st) return;
    var el = document.getElementById("stream-spectrum-" + i);
    if (el && st.spectra.length) {
      var xs = D.xs, data = [xs], maxX = 1;
      // A colour per measure, whatever the run recorded; TTFT's actual-send twin shares TTFT's.
      var colors = { ttft: "#1f6fb2", ttft_service: "#1f6fb2", itl: "#2a9d5c", tpot: "#8e5cc2", first_event: "#d1495b", event_gap: "#e08a1e" };
      var series = [{ label: "percentile", value: function (u, v) { return v == null ? "p99 \u00b7 max" : pctLabel(v); } }];
      st.spectra.forEach(function (m, k) {
        data.push(m.values);
        for (var j = m.values.length - 1; j >= 0; j--) {
          if (m.values[j] != null) { maxX = Math.max(maxX, xs[j]); break; }
        }
        // The first event comes first and is drawn wide and pale, so TTFT on top of it shows both.
        var stroke = colors[m.name] || "#555555";
        series.push({ label: m.label, stroke: m.under ? stroke + "66" : stroke, width: m.under ? 7 : (m.dash ? 1.5 : 2), dash: m.dash ? [7, 5] : undefined, points: { show: false }, value: function (u, v) { return v == null ? m.legend : fmtNs(v); } });
      });
      if (maxX <= 1) maxX = xs[xs.length - 1];
      make(el, {
        height: 380,
        title: "Stream measures by percentile",
        scales: {
          x: { time: false, distr: 3, log: 10, range: [1, maxX] },
          y: { distr: 3, log: 10, range: logRange },
        },
        axes: [
          axis({ label: "percentile (log of 1/(1\u2212p))", splits: function () { return decadeSplits(1, maxX); }, values: function (u, s) { return s.map(pctLabel); } }),
          axis({ label: "latency", size: 78, splits: logSplits, values: function (u, s) { return s.map(fmtAxis); } }),
        ],
        series: series,
        cursor: { drag: { x: true, y: false } },
      }, data);
    }
    var el3 = document.getElementById("ttft-time-" + i);
    var tt = st.ttft_time;
    if (el3 && tt && tt.t.length) {
      var pts3 = { show: tt.t.length <= 60, size: 4 };
      make(el3, {
        height: 230,
        title: "TTFT per interval (from the intended send)",
        scales: { x: { time: false, range: xRangeFrom(run.time.t0) }, y: { distr: 3, log: 10, range: logRange } },
        axes: [
          axis({ label: "seconds since start" }),
          axis({ label: "TTFT", size: 78, splits: logSplits, values: function (u, s) { return s.map(fmtAxis); } }),
        ],
        series: [
          { label: "t (s)", value: function (u, v) { return v == null ? "all intervals" : v.toFixed(1) + " s"; } },
          { label: "p50", points: pts3, stroke: "#1f6fb2", width: 2, value: function (u, v) { return v == null ? "" : fmtNs(v); } },
          { label: "p99", points: pts3, stroke: "#d1495b", width: 2, value: function (u, v) { return v == null ? "" : fmtNs(v); } },
          { label: "max", points: pts3, stroke: "#555555", width: 1, dash: [4, 4], value: function (u, v) { return v == null ? "" : fmtNs(v); } },
        ],
        hooks: { drawAxes: [warmupShade(run)] },
      }, [tt.t, tt.p50, tt.p99, tt.max]);
    }
    var el4 = document.getElementById("goodput-time-" + i);
    var gt = st.goodput_time;
    if (el4 && gt && gt.t.length) {
      var pts4 = { show: gt.t.length <= 60, size: 4 };
      var rateOf = function (v) { return v == null ? "" : fmtRate(v) + "/s"; };
      make(el4, {
        height: 210,
        title: "Goodput per interval: responses/s that met every objective, beside those completed",
        scales: { x: { time: false, range: xRangeFrom(run.time.t0) }, y: { range: function (u, min, max) { return [0, Math.max(1, max * 1.15)]; } } },
        axes: [
          axis({ label: "seconds since start" }),
          axis({ label: "requests/s", size: 70, values: function (u, s) { return s.map(fmtRate); } }),
        ],
        series: [
          { label: "t (s)", value: function (u, v) { return v == null ? "all intervals" : v.toFixed(1) + " s"; } },
          { label: "good/s", points: pts4, stroke: "#2a9d5c", width: 2, fill: "#2a9d5c22", value: function (u, v) { return v == null ? (gt.mean_per_s == null ? "no data" : "run " + fmtRate(gt.mean_per_s) + "/s") : rateOf(v); } },
          { label: "completed/s", points: pts4, stroke: "#555555", width: 1, dash: [4, 4], value: function (u, v) { return rateOf(v); } },
        ],
        hooks: { drawAxes: [warmupShade(run)] },
      }, [gt.t, gt.good_per_s, gt.completed_per_s]);
    }
    var el2 = document.getElementById("tokens-" + i);
    var tk = st.tokens;
    if (el2 && tk && tk.t.length) {
      var pts = { show: tk.t.length <= 60, size: 4 };
      make(el2, {
        height: 210,
        title: "Output tokens per second per interval",
        scales: { x: { time: false, range: xRangeFrom(run.time.t0) }, y: { range: function (u, min, max) { return [0, Math.max(1, max * 1.15)]; } } },
        axes: [
          axis({ label: "seconds since start" }),
          axis({ label: "tokens/s", size: 70, values: function (u, s) { return s.map(fmtRate); } }),
        ],
        series: [
          { label: "t (s)", value: function (u, v) { return v == null ? "all intervals" : v.toFixed(1) + " s"; } },
          { label: "output tokens/s", points: pts, stroke: run.color, width: 2, fill: run.color + "22", value: function (u, v) { return v == null ? (tk.mean_per_s == null ? "no data" : "run " + fmtRate(tk.mean_per_s) + "/s") : fmtRate(v) + "/s"; } },
        ],
        hooks: { drawAxes: [warmupShade(run)] },
      }, [tk.t, tk.per_s]);
    }
  }

  // True when the chart's canvas has enough painted pixels to be a real plot.
  function painted(u) {
    try {
      var c = u.ctx.canvas;
      var img = u.ctx.getImageData(0, 0, c.width, c.height).data;
      var n = 0;
      for (var i = 3; i < img.length; i += 16) if (img[i] > 0) n++;
      return n > 200;
    } catch (e) {
      fail("canvas check: " + e);
      return false;
    }
  }

  // True when every run's response curve ends at its max, inside the x range drawn.
  function spectrumReachesMax() {
    var u = charts[0];
    if (!u || !document.getElementById("spectrum")) return false;
    return D.runs.every(function (r, k) {
      if (!r.count) return true;
      var ys = u.data[1 + 2 * k], last = -1;
      for (var j = 0; j < ys.length; j++) if (ys[j] != null) last = j;
      return last >= 0 && ys[last] === r.spectrum.max_response && u.data[0][last] <= u.scales.x.max * (1 + 1e-9);
    });
  }

  function check() {
    root.setAttribute("data-spectrum-reaches-max", String(spectrumReachesMax()));
    root.setAttribute("data-time-axes-start-at-window", String(timeCharts.length > 0 && timeCharts.every(function (c) {
      return c[1] != null && Math.abs(c[0].scales.x.min - c[1]) < 1e-9;
    })));
    // What the load profile put on the charts: stage boundaries and target-line corners drawn.
    var marks = 0, corners = 0;
    timeCharts.forEach(function (c) { marks += c[0]._stageMarks || 0; corners += c[0]._targetCorners || 0; });
    root.setAttribute("data-stage-marks", String(marks));
    root.setAttribute("data-target-corners", String(corners));
    var drawn = charts.filter(painted).length;
    root.setAttribute("data-charts-expected", String(expected));
    root.setAttribute("data-charts-drawn", String(drawn));
  }

  try {
    if (typeof uPlot !== "function") throw new Error("uPlot did not load");
    spectrum();
    D.runs.forEach(overTime);
    D.runs.forEach(namesOverlay);
    D.runs.forEach(streams);
  } catch (e) {
    fail(e && e.stack ? e.stack : e);
  }
  // uPlot paints in a microtask after construction; check once it has.
  setTimeout(check, 30);
})();
