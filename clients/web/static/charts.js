/* Charts drawn by the page as SVG at the width it has: ratings with intervals, a bot's
   rating over its games, and its results game by game. */
(function () {
  "use strict";
  var S = function (name, attrs, parent) { return window.Moon.svg(name, attrs, parent); };

  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
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

  function text(parent, x, y, value, attrs) {
    var t = S("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = value;
    return t;
  }

  /* A name too long for its room keeps its beginning and ends with an ellipsis (drawn
     right-aligned, it would otherwise lose its beginning past the chart's left edge). */
  function fitLabel(node, name, room) {
    if (room <= 0 || node.getComputedTextLength() <= room) { return; }
    var lo = 1, hi = name.length;
    while (lo < hi) {
      var mid = Math.ceil((lo + hi) / 2);
      node.textContent = name.slice(0, mid) + "\u2026";
      if (node.getComputedTextLength() <= room) { lo = mid; } else { hi = mid - 1; }
    }
    node.textContent = name.slice(0, lo) + "\u2026";
  }

  /* Forest plot: one row per bot, the interval as a bar, the rating as a dot. */
  function ratingsChart(holder, rows) {
    var width = Math.max(280, holder.clientWidth);
    var font = parseFloat(getComputedStyle(holder).fontSize) || 16;
    var rowH = Math.round(font * 1.9);
    var longest = rows.reduce(function (m, r) { return Math.max(m, r.name.length); }, 4);
    var labelW = Math.min(Math.round(width * 0.38), Math.round(longest * font * 0.58) + 12);
    var valueW = Math.round(font * 3.2);
    var left = labelW, right = width - valueW, top = font * 0.6, axisH = font * 2;
    var height = top + rows.length * rowH + axisH;
    var lo = 0, hi = 0;
    rows.forEach(function (r) {
      lo = Math.min(lo, r.low === null ? r.rating : r.low, r.rating);
      hi = Math.max(hi, r.high === null ? r.rating : r.high, r.rating);
    });
    var pad = Math.max(20, (hi - lo) * 0.06);
    lo -= pad; hi += pad;
    var x = function (v) { return left + (v - lo) / (hi - lo) * (right - left); };
    holder.innerHTML = "";
    var svg = S("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         "class": "chart-svg ratings-svg" }, holder);
    var step = niceStep(hi - lo, Math.max(3, Math.floor((right - left) / (font * 5))));
    var axisY = top + rows.length * rowH;
    for (var v = Math.ceil(lo / step) * step; v <= hi; v += step) {
      S("line", { x1: x(v), x2: x(v), y1: top - 4, y2: axisY, "class": v === 0 ? "zero" : "grid" }, svg);
      text(svg, x(v), axisY + font * 1.3, String(Math.round(v)), { "class": "tick", "text-anchor": "middle" });
    }
    rows.forEach(function (r, i) {
      var y = top + i * rowH + rowH / 2;
      if (i % 2 === 0) { S("rect", { x: 0, y: y - rowH / 2, width: width, height: rowH, "class": "band" }, svg); }
      var a = S("a", { href: r.href }, svg);
      var label = text(a, labelW - 10, y + font * 0.35, r.name, { "class": "label", "text-anchor": "end" });
      fitLabel(label, r.name, labelW - 12);
      S("title", {}, a).textContent = r.name;
      if (r.low !== null && r.high !== null) {
        S("line", { x1: x(r.low), x2: x(r.high), y1: y, y2: y, "class": "ci" }, svg);
        S("line", { x1: x(r.low), x2: x(r.low), y1: y - rowH * 0.22, y2: y + rowH * 0.22, "class": "ci" }, svg);
        S("line", { x1: x(r.high), x2: x(r.high), y1: y - rowH * 0.22, y2: y + rowH * 0.22, "class": "ci" }, svg);
      }
      var dot = S("circle", { cx: x(r.rating), cy: y, r: Math.max(4, rowH * 0.18), "class": "point" }, svg);
      S("title", {}, dot).textContent = r.name + ": " + r.rating +
        (r.low !== null ? " [" + r.low + ", " + r.high + "]" : "");
      text(svg, width - 4, y + font * 0.35, String(r.rating), { "class": "value", "text-anchor": "end" });
    });
    // Rows drawn after the grid lines cover them: draw the zero line again on top.
    if (lo < 0 && hi > 0) {
      S("line", { x1: x(0), x2: x(0), y1: top - 4, y2: axisY, "class": "zero" }, svg);
    }
  }

  /* A bot's results: one column per game (up a win, down a loss, a dot a draw) and the
     running share of points. */
  function resultsChart(holder, games) {
    holder.innerHTML = "";
    if (!games.length) {
      var p = document.createElement("p");
      p.className = "empty";
      p.textContent = "No public results yet.";
      holder.appendChild(p);
      return;
    }
    var width = Math.max(280, holder.clientWidth);
    var font = parseFloat(getComputedStyle(holder).fontSize) || 16;
    var height = Math.round(font * 9);
    var left = font * 2.6, right = width - 8, top = font * 0.8, bottom = height - font * 1.8;
    var mid = (top + bottom) / 2;
    var n = games.length;
    var col = (right - left) / n;
    var svg = S("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         "class": "chart-svg results-svg" }, holder);
    [0, 0.5, 1].forEach(function (share) {
      var y = bottom - share * (bottom - top);
      S("line", { x1: left, x2: right, y1: y, y2: y, "class": share === 0.5 ? "zero" : "grid" }, svg);
      text(svg, left - 6, y + font * 0.35, Math.round(share * 100) + "%", { "class": "tick", "text-anchor": "end" });
    });
    var points = 0;
    var line = [];
    games.forEach(function (g, i) {
      var cx = left + col * (i + 0.5);
      var w = Math.max(1, Math.min(col * 0.7, font));
      var h = (bottom - top) * 0.22;
      var link = S("a", { href: "/game/" + encodeURIComponent(g.id) }, svg);
      var mark;
      if (g.outcome === "win") {
        mark = S("rect", { x: cx - w / 2, y: mid - h, width: w, height: h, "class": "win" }, link);
      } else if (g.outcome === "loss") {
        mark = S("rect", { x: cx - w / 2, y: mid, width: w, height: h, "class": "loss" }, link);
      } else {
        mark = S("rect", { x: cx - w / 2, y: mid - h * 0.15, width: w, height: h * 0.3, "class": g.outcome }, link);
      }
      S("title", {}, mark).textContent = "game " + (i + 1) + " (" + g.id + "): " + (g.label || g.outcome) +
        (g.score !== null ? ", score " + g.score : "") + (g.place !== null ? ", place " + g.place : "");
      points += g.outcome === "win" ? 1 : g.outcome === "draw" || g.outcome === "shared" ? 0.5 : 0;
      line.push([cx, bottom - (points / (i + 1)) * (bottom - top)]);
    });
    S("polyline", { points: line.map(function (p) { return p[0].toFixed(1) + "," + p[1].toFixed(1); }).join(" "),
                    "class": "share" }, svg);
    text(svg, left, height - font * 0.4, "game 1", { "class": "tick" });
    text(svg, right, height - font * 0.4, "game " + n + " · line: share of points so far", { "class": "tick", "text-anchor": "end" });
  }

  /* A bot's rating over its games: the 95% band, the rating line, a dot per fit. */
  function historyChart(holder, points) {
    holder.innerHTML = "";
    var width = Math.max(280, holder.clientWidth);
    var font = parseFloat(getComputedStyle(holder).fontSize) || 16;
    var height = Math.round(font * 11);
    var left = font * 3.2, right = width - 10, top = font * 0.8, bottom = height - font * 2;
    // The scale follows the ratings and a typical interval: the first fits' intervals are
    // wide (few games) and would flatten the rest, so the band is clipped at the edges.
    var lo = Infinity, hi = -Infinity, halves = [];
    points.forEach(function (p) {
      lo = Math.min(lo, p.rating);
      hi = Math.max(hi, p.rating);
      if (p.low !== null && p.high !== null) { halves.push((p.high - p.low) / 2); }
    });
    halves.sort(function (a, b) { return a - b; });
    var half = halves.length ? halves[Math.floor(halves.length / 2)] : 0;
    var pad = Math.max(20, half, (hi - lo) * 0.08);
    lo -= pad; hi += pad;
    var g0 = points[0].games, g1 = points[points.length - 1].games;
    if (g1 === g0) { g0 -= 1; g1 += 1; }
    var x = function (g) { return left + (g - g0) / (g1 - g0) * (right - left); };
    var y = function (v) { return bottom - (v - lo) / (hi - lo) * (bottom - top); };
    var svg = S("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         "class": "chart-svg history-svg" }, holder);
    var step = niceStep(hi - lo, 4);
    for (var v = Math.ceil(lo / step) * step; v <= hi; v += step) {
      S("line", { x1: left, x2: right, y1: y(v), y2: y(v), "class": v === 0 ? "zero" : "grid" }, svg);
      text(svg, left - 6, y(v) + font * 0.35, String(Math.round(v)), { "class": "tick", "text-anchor": "end" });
    }
    var banded = points.filter(function (p) { return p.low !== null && p.high !== null; });
    if (banded.length) {
      var clip = "clip-" + holder.id;
      var defs = S("defs", {}, svg);
      S("rect", { x: left, y: top, width: right - left, height: bottom - top },
        S("clipPath", { id: clip }, defs));
      var upper = banded.map(function (p) { return x(p.games).toFixed(1) + "," + y(p.high).toFixed(1); });
      var lower = banded.slice().reverse().map(function (p) { return x(p.games).toFixed(1) + "," + y(p.low).toFixed(1); });
      S("polygon", { points: upper.concat(lower).join(" "), "class": "ci-band",
                     "clip-path": "url(#" + clip + ")" }, svg);
    }
    S("polyline", { points: points.map(function (p) { return x(p.games).toFixed(1) + "," + y(p.rating).toFixed(1); }).join(" "),
                    "class": "share" }, svg);
    points.forEach(function (p) {
      var dot = S("circle", { cx: x(p.games), cy: y(p.rating), r: Math.max(2.5, font * 0.18), "class": "point" }, svg);
      S("title", {}, dot).textContent = p.rating + (p.low !== null ? " [" + p.low + ", " + p.high + "]" :
                                                    p.thin ? " (interval: not enough games yet)" : "") +
        " after " + p.games + (p.games === 1 ? " game" : " games") + (p.at.text ? " (" + p.at.text + ")" : "");
    });
    function games(n) { return n + (n === 1 ? " game" : " games"); }
    text(svg, left, height - font * 0.4, games(points[0].games), { "class": "tick" });
    text(svg, right, height - font * 0.4, games(points[points.length - 1].games), { "class": "tick", "text-anchor": "end" });
  }

  function draw() {
    ["3p", "2v2"].forEach(function (pool) {
      var h = document.getElementById("history-" + pool);
      var points = data("history-" + pool + "-data");
      if (h && points && points.length) { historyChart(h, points); }
    });
    var r = document.getElementById("ratings-chart");
    var rows = data("ratings-data");
    if (r && rows) { ratingsChart(r, rows); }
    var g = document.getElementById("results-chart");
    var games = data("results-data");
    if (g && games) { resultsChart(g, games); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    draw();
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(draw, 100);
    });
  });
})();
