/* Dominoes with pips, drawn as inline SVG (no images, nothing from outside). */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  // Pip positions on one square half, as fractions of its side.
  var PIPS = {
    0: [],
    1: [[0.5, 0.5]],
    2: [[0.25, 0.25], [0.75, 0.75]],
    3: [[0.25, 0.25], [0.5, 0.5], [0.75, 0.75]],
    4: [[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]],
    5: [[0.25, 0.25], [0.75, 0.25], [0.5, 0.5], [0.25, 0.75], [0.75, 0.75]],
    6: [[0.22, 0.27], [0.5, 0.27], [0.78, 0.27], [0.22, 0.73], [0.5, 0.73], [0.78, 0.73]]
  };

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function parse(tile) {
    var parts = String(tile).split("-");
    return [parseInt(parts[0], 10), parseInt(parts[1], 10)];
  }

  /* An <svg> domino for "6-4": the high end on the left. */
  function domino(tile, cls) {
    var ends = parse(tile);
    var svg = el("svg", {
      viewBox: "0 0 204 104", "class": "domino" + (cls ? " " + cls : ""),
      role: "img", "aria-label": tile, "data-tile": tile
    });
    el("title", {}, svg).textContent = tile;
    el("rect", { x: 2, y: 2, width: 200, height: 100, rx: 14, "class": "d-face" }, svg);
    el("line", { x1: 102, y1: 14, x2: 102, y2: 90, "class": "d-mid" }, svg);
    ends.forEach(function (n, half) {
      (PIPS[n] || []).forEach(function (p) {
        el("circle", { cx: 2 + half * 100 + p[0] * 100, cy: 2 + p[1] * 100, r: 9.5, "class": "d-pip" }, svg);
      });
    });
    return svg;
  }

  /* A face-down domino: a tile nobody may see. */
  function back(cls) {
    var svg = el("svg", { viewBox: "0 0 204 104", "class": "domino back" + (cls ? " " + cls : ""),
                          role: "img", "aria-label": "face down" });
    el("rect", { x: 2, y: 2, width: 200, height: 100, rx: 14, "class": "d-back" }, svg);
    el("rect", { x: 16, y: 16, width: 172, height: 72, rx: 8, "class": "d-back-inner" }, svg);
    return svg;
  }

  window.Moon = { domino: domino, back: back, svg: el };
})();
