/* A test of a change: the LLR over pairs against its bounds and the pair scores as bars,
   drawn as SVG at the width the page has (like charts.js), live by server-sent events. */
(function () {
  "use strict";
  var S = function (name, attrs, parent) { return window.Moon.svg(name, attrs, parent); };

  function text(parent, x, y, value, attrs) {
    var t = S("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = value;
    return t;
  }

  function niceStep(span, count) {
    var raw = span / Math.max(count, 1);
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (raw <= steps[i] * mag) { return steps[i] * mag; }
    }
    return 10 * mag;
  }

  /* The LLR after each pair: a line, the two bounds dashed, the verdict's pair marked. */
  function llrChart(holder, d) {
    holder.innerHTML = "";
    var width = Math.max(280, holder.clientWidth);
    var font = parseFloat(getComputedStyle(holder).fontSize) || 16;
    var height = Math.round(font * 13);
    var left = font * 2.8, right = width - font * 2.6, top = font * 1.8, bottom = height - font * 2;
    var pts = d.llr;
    var lo = Math.min(d.lower * 1.15, 0), hi = Math.max(d.upper * 1.15, 0);
    pts.forEach(function (p) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); });
    var n = pts.length ? pts[pts.length - 1][0] : 1;
    var x = function (k) { return left + (k / Math.max(n, 1)) * (right - left); };
    var y = function (v) { return bottom - (v - lo) / (hi - lo) * (bottom - top); };
    var svg = S("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         "class": "chart-svg llr-svg" }, holder);
    var step = niceStep(hi - lo, 5);
    for (var v = Math.ceil(lo / step) * step; v <= hi; v += step) {
      S("line", { x1: left, x2: right, y1: y(v), y2: y(v), "class": Math.abs(v) < 1e-9 ? "zero" : "grid" }, svg);
      text(svg, left - 6, y(v) + font * 0.35, String(Math.round(v * 100) / 100), { "class": "tick", "text-anchor": "end" });
    }
    [["upper", "H1"], ["lower", "H0"]].forEach(function (b) {
      S("line", { x1: left, x2: right, y1: y(d[b[0]]), y2: y(d[b[0]]), "class": "bound " + b[1] }, svg);
      text(svg, right + 4, y(d[b[0]]) + font * 0.35, b[1], { "class": "tick bound-label" });
    });
    if (pts.length) {
      S("polyline", { points: [[0, 0]].concat(pts).map(function (p) { return x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1); }).join(" "),
                      "class": "share" }, svg);
      var last = pts[pts.length - 1];
      var dot = S("circle", { cx: x(last[0]), cy: y(last[1]), r: Math.max(3, font * 0.2), "class": "point" }, svg);
      S("title", {}, dot).textContent = "LLR " + last[1].toFixed(2) + " after " + last[0] + " pairs";
      if (d.verdict > 0) {
        var hit = pts.filter(function (p) { return p[0] === d.verdict; })[0];
        if (hit) {
          var mark = S("circle", { cx: x(hit[0]), cy: y(hit[1]), r: Math.max(5, font * 0.32), "class": "verdict-mark" }, svg);
          S("title", {}, mark).textContent = d.verdict_word + " accepted after " + hit[0] + " pairs";
          text(svg, x(hit[0]), y(hit[1]) - font * 0.7, d.verdict_word, { "class": "value", "text-anchor": "middle" });
        }
      }
    } else {
      text(svg, (left + right) / 2, (top + bottom) / 2, "no pair counted yet", { "class": "tick", "text-anchor": "middle" });
    }
    text(svg, left, height - font * 0.4, "0 pairs", { "class": "tick" });
    text(svg, right, height - font * 0.4, n + (n === 1 ? " pair" : " pairs"), { "class": "tick", "text-anchor": "end" });
  }

  /* The pair scores: the pentanomial as wide bars, the in-between bins thin. */
  function pentaChart(holder, d) {
    holder.innerHTML = "";
    var width = Math.max(280, holder.clientWidth);
    var font = parseFloat(getComputedStyle(holder).fontSize) || 16;
    var height = Math.round(font * 13);
    var left = font * 0.8, right = width - font * 0.8, top = font * 1.6, bottom = height - font * 2;
    var most = d.bins.reduce(function (m, b) { return Math.max(m, b.count); }, 1);
    var slot = (right - left) / 9;
    var svg = S("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         "class": "chart-svg penta-svg" }, holder);
    S("line", { x1: left, x2: right, y1: bottom, y2: bottom, "class": "grid" }, svg);
    d.bins.forEach(function (b, i) {
      if (!b.main && !b.count) { return; }
      var w = b.main ? slot * 1.5 : slot * 0.45;
      var cx = left + slot * (i + 0.5);
      var h = (bottom - top) * b.count / most;
      var cls = i < 4 ? "loss" : i > 4 ? "win" : "draw";
      var bar = S("rect", { x: cx - w / 2, y: bottom - h, width: w, height: Math.max(h, 0.5),
                            "class": "bar " + cls + (b.main ? "" : " between") }, svg);
      S("title", {}, bar).textContent = "pair score " + b.label + ": " + b.count + (b.count === 1 ? " pair" : " pairs");
      text(svg, cx, bottom - h - font * 0.3, String(b.count), { "class": b.main ? "value" : "tick", "text-anchor": "middle" });
      if (b.main) {
        text(svg, cx, height - font * 0.5, b.label, { "class": "tick", "text-anchor": "middle" });
      }
    });
  }

  function draw() {
    var node = document.getElementById("test-chart-data");
    if (!node) { return; }
    var d = JSON.parse(node.textContent);
    var l = document.getElementById("llr-chart");
    if (l && d.sequential) { llrChart(l, d); }
    var p = document.getElementById("penta-chart");
    if (p) { pentaChart(p, d); }
  }

  function follow(article) {
    var id = article.getAttribute("data-id");
    var live = document.getElementById("live");
    var parts = { status: "t-status", summary: "t-summary", pairs: "t-pairs", games: "t-games" };
    var source = null, retry = null;
    function show(state) {
      if (live) { live.hidden = false; live.textContent = state; live.className = "live " + state.replace(/[^a-z]/g, ""); }
    }
    function apply(data) {
      Object.keys(parts).forEach(function (key) {
        var node = document.getElementById(parts[key]);
        if (node && typeof data.html[key] === "string" && node.innerHTML !== data.html[key]) {
          node.innerHTML = data.html[key];
        }
      });
      var holder = document.getElementById("test-chart-data");
      if (holder && data.chart) { holder.textContent = JSON.stringify(data.chart); draw(); }
      article.setAttribute("data-seq", data.seq);
      article.setAttribute("data-status", data.status);
      article.setAttribute("data-updates", String(parseInt(article.getAttribute("data-updates") || "0", 10) + 1));
    }
    function connect() {
      retry = null;
      var after = article.getAttribute("data-seq") || "0";
      source = new EventSource("/test/" + encodeURIComponent(id) + "/events?after=" + encodeURIComponent(after));
      source.addEventListener("open", function () { show("live"); });
      source.addEventListener("state", function (ev) { apply(JSON.parse(ev.data)); });
      source.addEventListener("end", function () { source.close(); if (live) { live.hidden = true; } });
      source.addEventListener("gone", function () { source.close(); show("gone"); });
      source.addEventListener("busy", function () { source.close(); show("too many live pages"); });
      source.addEventListener("failed", function () { source.close(); show("stopped"); });
      source.addEventListener("error", function () {
        show("reconnecting");
        if (source.readyState === EventSource.CLOSED && !retry) { retry = setTimeout(connect, 5000); }
      });
    }
    if (article.getAttribute("data-status") === "running") { connect(); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    draw();
    var article = document.getElementById("test");
    if (article) { follow(article); }
    var pending = null;
    window.addEventListener("resize", function () { clearTimeout(pending); pending = setTimeout(draw, 100); });
  });
})();
