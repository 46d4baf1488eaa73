// Pilothouse charts: draws the history embedded in #chart-data with uPlot
// (vendored under /static/vendor/uplot). Numbers: the mean as a line with
// a min–max band; other values: one coloured segment per value held; a
// rule's firings: marks on every chart and a lane of their own (click one
// to open its run). Cursors move together across a page's charts; a drag
// zooms (the page reloads with that range); the server's downtimes are
// hatched gaps. The page says the same in words (each chart's caption)
// without this script.
(function () {
  "use strict";
  var src = document.getElementById("chart-data");
  if (!src || !window.uPlot) return;
  var data;
  try { data = JSON.parse(src.textContent); } catch (e) { return; }

  var css = getComputedStyle(document.documentElement);
  function cv(name) { return css.getPropertyValue(name).trim(); }
  var C = { fg: cv("--fg"), muted: cv("--muted"), line: cv("--line"), accent: cv("--accent"), ok: cv("--ok"),
    bad: cv("--bad"), idle: cv("--idle"), warn: cv("--warn"), ext: cv("--ext"), run: cv("--run") };
  var palette = [C.accent, C.warn, C.ext, C.ok, "#c2410c", "#0f766e", "#a21caf", "#4d7c0f"];
  // Values that mean "nothing going on" are drawn quietly.
  var quiet = { "false": 1, "OFF": 1, "off": 1, "idle": 1, "CLOSE": 1, "closed": 1, "null": 1 };
  var tz = data.tz;
  var tzDate = tz ? function (ts) { return uPlot.tzDate(new Date(ts * 1e3), tz); } : undefined;
  var two = function (n) { return n < 10 ? "0" + n : "" + n; };
  function clock(ts) {
    var d = tzDate ? tzDate(ts) : new Date(ts * 1e3);
    return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + ":" + two(d.getMinutes());
  }
  var days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  // Time labels in 24-hour form; a day's name where the day changes.
  function xValues(u, splits, ax, space, incr) {
    return splits.map(function (ts, i) {
      var d = tzDate ? tzDate(ts) : new Date(ts * 1e3);
      var hm = two(d.getHours()) + ":" + two(d.getMinutes()), day = days[d.getDay()] + " " + d.getDate();
      if (incr < 60) hm += ":" + two(d.getSeconds()); // a zoomed-in range ticks in seconds
      if (incr >= 86400) return day;
      return hm === "00:00" || i === 0 ? day + "\n" + hm : hm;
    });
  }
  function num(v) { return v == null ? "—" : (Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 100) / 100).toString(); }

  function firingColor(f) {
    if (f.status === "skipped") return C.warn;
    return f.class === "st-bad" ? C.bad : f.class === "st-idle" ? C.idle : f.class === "st-run" ? C.run : C.ok;
  }
  // Every chart shows the rule's firings as dashed lines.
  function drawFirings(u) {
    var fs = data.firings || [], ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
    ctx.save();
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.lineWidth = devicePixelRatio;
    fs.forEach(function (f) {
      var x = Math.round(u.valToPos(f.t, "x", true));
      ctx.strokeStyle = firingColor(f);
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
    });
    ctx.restore();
  }

  // The server's downtimes: hatched, as nothing was recorded then.
  function drawGaps(u) {
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, step = 6 * devicePixelRatio, n = 0;
    (data.gaps || []).forEach(function (g) {
      var x0 = u.valToPos(g[0], "x", true), x1 = Math.max(u.valToPos(g[1], "x", true), x0 + 2 * devicePixelRatio);
      if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) return;
      n++;
      ctx.save();
      ctx.beginPath(); ctx.rect(x0, top, x1 - x0, h); ctx.clip();
      ctx.fillStyle = C.line + "55"; ctx.fillRect(x0, top, x1 - x0, h);
      ctx.strokeStyle = C.muted; ctx.lineWidth = devicePixelRatio;
      for (var x = x0 - h; x < x1; x += step) { ctx.beginPath(); ctx.moveTo(x, top + h); ctx.lineTo(x + h, top); ctx.stroke(); }
      ctx.restore();
    });
    document.body.setAttribute("data-gaps-drawn", String(n)); // what a test can see of the canvas
  }
  // The spans a chart's device said it was offline: hatched in the alarm
  // colour, as rules read no value of it then.
  function drawOffline(fig, spec) {
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, step = 6 * devicePixelRatio, n = 0;
      (spec.offline || []).forEach(function (g) {
        var x0 = u.valToPos(g[0], "x", true), x1 = Math.max(u.valToPos(g[1], "x", true), x0 + 2 * devicePixelRatio);
        if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) return;
        n++;
        ctx.save();
        ctx.beginPath(); ctx.rect(x0, top, x1 - x0, h); ctx.clip();
        ctx.fillStyle = C.bad + "22"; ctx.fillRect(x0, top, x1 - x0, h);
        ctx.strokeStyle = C.bad + "88"; ctx.lineWidth = devicePixelRatio;
        for (var x = x0 - h; x < x1; x += step) { ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x + h, top + h); ctx.stroke(); }
        ctx.restore();
      });
      fig.setAttribute("data-offline-drawn", String(n)); // what a test can see of the canvas
    };
  }
  // A drag across a chart asks the page for that range (the same address
  // the range form makes, so it can be kept and shared).
  function zoomTo(u) {
    var s = u.select;
    if (!s || s.width < 4) return;
    var from = Math.floor(u.posToVal(s.left, "x")), to = Math.ceil(u.posToVal(s.left + s.width, "x"));
    if (to - from < 60) { var mid = (from + to) / 2; from = Math.floor(mid - 30); to = from + 60; } // the shortest range
    var q = new URLSearchParams(location.search);
    q.delete("range"); q.set("from", String(from)); q.set("to", String(to));
    location.search = q.toString();
  }

  function axes(yValues, ySize) {
    var x = { stroke: C.muted, grid: { stroke: C.line, width: 1 }, ticks: { stroke: C.line, width: 1 }, values: xValues, size: 44 };
    var y = yValues ? { stroke: C.muted, grid: { stroke: C.line, width: 1 }, ticks: { stroke: C.line, width: 1 }, values: yValues, size: ySize || 56 }
      : { show: false };
    return [x, y];
  }
  function base(width, height, extra) {
    var o = { width: width, height: height, tzDate: tzDate, legend: { show: false },
      cursor: { sync: { key: "history" }, drag: { x: true, y: false, setScale: false }, points: { show: false } },
      scales: { x: { time: true, range: function () { return [data.from, data.to]; } } } };
    for (var k in extra) o[k] = extra[k];
    o.hooks = o.hooks || {};
    o.hooks.draw = [drawGaps].concat(o.hooks.draw || [], [drawFirings]);
    o.hooks.setSelect = [zoomTo];
    return o;
  }

  function readout(fig) {
    var r = fig.querySelector(".readout");
    if (!r) { r = document.createElement("div"); r.className = "readout sub"; fig.appendChild(r); }
    return r;
  }

  function lineChart(fig, spec, width) {
    var unit = spec.unit ? " " + spec.unit : "";
    var stepped = spec.step ? uPlot.paths.stepped({ align: 1 }) : undefined;
    var faint = C.accent + "33";
    var out = readout(fig);
    var opts = base(width, 150, {
      axes: axes(function (u, splits) { return splits.map(function (s) { return num(s) + unit; }); }, 64),
      series: [{}, { label: "mean", stroke: C.accent, width: 2, paths: stepped },
        { label: "min", stroke: faint, paths: stepped }, { label: "max", stroke: faint, paths: stepped }],
      bands: [{ series: [3, 2], fill: C.accent + "22" }],
      hooks: { setCursor: [function (u) {
        var i = u.cursor.idx;
        out.textContent = i == null ? "" : clock(spec.t[i]) + ": " + num(spec.mean[i]) + unit +
          (spec.min[i] !== spec.max[i] ? " (" + num(spec.min[i]) + "–" + num(spec.max[i]) + ")" : "");
      }] }
    });
    opts.cursor.points = { show: true };
    opts.hooks.draw.unshift(drawOffline(fig, spec));
    return new uPlot(opts, [spec.t, spec.mean, spec.min, spec.max], fig.querySelector(".plot"));
  }

  function bandColors(spec) {
    var n = 0;
    return spec.values.map(function (v) { return quiet[v] ? C.line : palette[n++ % palette.length]; });
  }
  function segAt(segs, t) {
    for (var i = 0; i < segs.length; i++) if (t >= segs[i][0] && t < segs[i][1]) return segs[i];
    return null;
  }

  function bandChart(fig, spec, width) {
    var colors = bandColors(spec), out = readout(fig);
    legendOf(fig, spec, colors);
    var opts = base(width, 84, {
      axes: axes(null),
      scales: { x: { time: true, range: function () { return [data.from, data.to]; } }, y: { range: [0, 1] } },
      series: [{}, { stroke: "transparent", points: { show: false } }],
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, top = u.bbox.top + 2 * devicePixelRatio, h = u.bbox.height - 4 * devicePixelRatio;
          spec.segs.forEach(function (s) {
            var x0 = u.valToPos(s[0], "x", true), x1 = u.valToPos(s[1], "x", true);
            ctx.fillStyle = colors[s[2]];
            ctx.fillRect(x0, top, Math.max(x1 - x0, devicePixelRatio), h);
          });
        }],
        setCursor: [function (u) {
          var s = u.cursor.left == null || u.cursor.left < 0 ? null : segAt(spec.segs, u.posToVal(u.cursor.left, "x"));
          out.textContent = s ? clock(s[0]) + "–" + clock(s[1]).slice(11) + ": " + spec.values[s[2]] + (s[3] > 1 ? " (" + s[3] + " changes)" : "") : "";
        }]
      }
    });
    opts.hooks.draw.push(drawOffline(fig, spec));
    return new uPlot(opts, [[data.from, data.to], [0, 0]], fig.querySelector(".plot"));
  }

  function legendOf(fig, spec, colors) {
    var cap = fig.querySelector("figcaption");
    if (!cap || !spec.values.length) return;
    var ul = document.createElement("span");
    ul.className = "keys";
    spec.values.forEach(function (v, i) {
      var k = document.createElement("span"), sw = document.createElement("i");
      k.className = "key";
      sw.style.background = colors[i];
      k.appendChild(sw);
      k.appendChild(document.createTextNode(v));
      ul.appendChild(k);
    });
    cap.appendChild(ul);
  }

  // The firings lane: one mark per firing; a click opens the nearest run.
  function firingsChart(fig, width) {
    var fs = data.firings || [], out = readout(fig);
    var near = function (u, px) {
      var best = null, bd = 8;
      fs.forEach(function (f) { var d = Math.abs(u.valToPos(f.t, "x") - px); if (d < bd) { bd = d; best = f; } });
      return best;
    };
    var opts = base(width, 80, {
      axes: axes(null),
      scales: { x: { time: true, range: function () { return [data.from, data.to]; } }, y: { range: [0, 1] } },
      series: [{}, { stroke: "transparent", points: { show: false } }],
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, y = u.bbox.top + u.bbox.height / 2, r = 5 * devicePixelRatio;
          fs.forEach(function (f) {
            ctx.fillStyle = firingColor(f);
            ctx.beginPath(); ctx.arc(u.valToPos(f.t, "x", true), y, r, 0, 2 * Math.PI); ctx.fill();
          });
        }],
        setCursor: [function (u) {
          var f = u.cursor.left == null || u.cursor.left < 0 ? null : near(u, u.cursor.left);
          out.textContent = f ? clock(f.t) + ": " + f.status + " (click to open the run)" : "";
          u.over.style.cursor = f ? "pointer" : "";
        }]
      }
    });
    var u = new uPlot(opts, [[data.from, data.to], [0, 0]], fig.querySelector(".plot"));
    u.over.addEventListener("click", function () {
      var f = u.cursor.left == null ? null : near(u, u.cursor.left);
      if (f) location.href = "/runs/" + encodeURIComponent(f.run);
    });
    return u;
  }

  var plots = [];
  var specs = {};
  (data.charts || []).forEach(function (s) {
    ["t", "mean", "min", "max", "segs", "values"].forEach(function (k) { s[k] = s[k] || []; });
    specs[s.id] = s;
  });
  document.querySelectorAll("figure[data-chart]").forEach(function (fig) {
    var id = fig.getAttribute("data-chart"), box = fig.querySelector(".plot");
    if (!box) return;
    var width = box.clientWidth || 600;
    var u = id === "firings" ? firingsChart(fig, width)
      : specs[id] && specs[id].kind === "line" ? lineChart(fig, specs[id], width)
      : specs[id] ? bandChart(fig, specs[id], width) : null;
    if (u) { plots.push({ u: u, box: box }); fig.classList.add("drawn"); }
  });
  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (p) { p.u.setSize({ width: p.box.clientWidth, height: p.u.height }); });
    }, 100);
  });
  document.body.setAttribute("data-charts", String(plots.length));
})();
