/* The arena page live: its parts redrawn from server-sent events as they change. */
(function () {
  "use strict";
  var article = document.getElementById("arena");
  if (!article || !window.EventSource) { return; }
  var pool = article.getAttribute("data-pool");
  var live = document.getElementById("live");
  var parts = { status: "a-status", leaderboard: "a-leaderboard", bots: "a-bots",
                boards: "a-boards", games: "a-games" };
  var last = {};
  var source = null;

  function show(state) {
    if (!live) { return; }
    live.hidden = false;
    live.textContent = state;
    live.className = "live " + state.replace(/[^a-z]/g, "");
  }

  function apply(data) {
    Object.keys(parts).forEach(function (key) {
      var node = document.getElementById(parts[key]);
      var html = data.html ? data.html[key] : undefined;
      if (!node || typeof html !== "string" || last[key] === html) { return; }
      last[key] = html;
      node.innerHTML = html;
    });
    article.setAttribute("data-seq", data.seq);
    article.setAttribute("data-updates",
      String(parseInt(article.getAttribute("data-updates") || "0", 10) + 1));
  }

  function connect() {
    var after = article.getAttribute("data-seq") || "0";
    source = new EventSource("/arena/" + encodeURIComponent(pool) + "/events?after=" +
                             encodeURIComponent(after));
    source.addEventListener("open", function () { show("live"); });
    source.addEventListener("state", function (ev) { apply(JSON.parse(ev.data)); });
    source.addEventListener("busy", function () { show("busy"); source.close(); });
    source.addEventListener("error", function () {
      show("reconnecting");
    });
  }
  connect();
}());
