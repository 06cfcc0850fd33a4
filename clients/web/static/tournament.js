/* The tournament page live (server-sent events), its bracket's lines, and the list's refresh. */
(function () {
  "use strict";

  /* ---------- bracket lines: from each match to the one its winner goes to ---------- */
  function drawBracketLines(root) {
    (root || document).querySelectorAll(".bracket").forEach(function (br) {
      var svg = br.querySelector(".bracket-lines");
      if (!svg) { return; }
      while (svg.firstChild) { svg.removeChild(svg.firstChild); }
      var box = br.getBoundingClientRect();
      svg.setAttribute("width", br.scrollWidth);
      svg.setAttribute("height", br.scrollHeight);
      br.querySelectorAll(".bm[data-winner-to]").forEach(function (bm) {
        var to = bm.getAttribute("data-winner-to");
        if (!to) { return; }
        var target = br.querySelector('.bm[data-id="' + CSS.escape(to) + '"]');
        if (!target) { return; }
        var a = bm.getBoundingClientRect();
        var b = target.getBoundingClientRect();
        var x1 = a.right - box.left, y1 = a.top + a.height / 2 - box.top;
        var x2 = b.left - box.left, y2 = b.top + b.height / 2 - box.top;
        var xm = x1 + (x2 - x1) / 2;
        var path = window.Moon.svg("path", {
          d: "M" + x1 + " " + y1 + " H" + xm + " V" + y2 + " H" + x2,
          "class": "bl" + (bm.getAttribute("data-state") === "decided" || bm.getAttribute("data-state") === "bye" ? " done" : "")
        }, svg);
        path.setAttribute("data-from", bm.getAttribute("data-id"));
      });
    });
  }

  /* ---------- the tournament page ---------- */
  function followTournament(article) {
    var id = article.getAttribute("data-id");
    var live = document.getElementById("live");
    var source = null;
    var retry = null;
    var parts = { status: "t-status", progress: "t-progress", boards: "t-boards",
                  standings: "t-standings", crosstable: "t-crosstable", bracket: "t-bracket",
                  rounds: "t-rounds", games: "t-games" };

    function show(state) {
      if (live) {
        live.hidden = false;
        live.textContent = state;
        live.className = "live " + state.replace(/[^a-z]/g, "");
      }
    }

    var last = {};  // the HTML of each part as last received: only a change is redrawn
    function apply(data) {
      Object.keys(parts).forEach(function (key) {
        var node = document.getElementById(parts[key]);
        var html = data.html ? data.html[key] : undefined;
        if (!node || typeof html !== "string" || last[key] === html) { return; }
        var first = !(key in last);
        last[key] = html;
        node.innerHTML = html;
        if (key === "boards") { node.hidden = !html.trim(); }
        if (key === "rounds" && node.parentElement) { node.parentElement.hidden = !html.trim(); }
        if (!first && key === "progress") {
          node.classList.remove("flash");
          void node.offsetWidth;
          node.classList.add("flash");
        }
      });
      article.setAttribute("data-seq", data.seq);
      article.setAttribute("data-status", data.status);
      article.setAttribute("data-updates", String(parseInt(article.getAttribute("data-updates") || "0", 10) + 1));
      drawBracketLines(article);
    }

    function connect() {
      retry = null;
      var after = article.getAttribute("data-seq") || "0";
      source = new EventSource("/t/" + encodeURIComponent(id) + "/events?after=" + encodeURIComponent(after));
      source.addEventListener("open", function () { show("live"); });
      source.addEventListener("state", function (ev) { apply(JSON.parse(ev.data)); });
      source.addEventListener("end", function () {
        source.close();
        if (live) { live.hidden = true; }
      });
      source.addEventListener("gone", function () { source.close(); show("gone"); });
      source.addEventListener("busy", function () { source.close(); show("too many live pages"); });
      source.addEventListener("failed", function () { source.close(); show("stopped"); });
      source.addEventListener("error", function () {
        show("reconnecting");
        if (source.readyState === EventSource.CLOSED && !retry) {
          retry = setTimeout(connect, 5000);  // the browser gave up: start again after the last sequence
        }
      });
    }

    if (article.getAttribute("data-status") === "running") { connect(); }
  }

  /* ---------- the list of tournaments: refreshed while one runs ---------- */
  function refreshList() {
    var list = document.getElementById("tournaments");
    if (!list || list.getAttribute("data-live") !== "yes") { return; }
    setTimeout(function () {
      var q = new URLSearchParams(window.location.search);
      q.set("partial", "1");
      fetch("/?" + q.toString(), { headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html) {
            var holder = document.createElement("div");
            holder.innerHTML = html;
            var fresh = holder.firstElementChild;
            if (fresh) { list.replaceWith(fresh); }
          }
        })
        .catch(function () { return null; })
        .then(refreshList);
    }, 4000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var article = document.getElementById("tournament");
    if (article) {
      drawBracketLines(article);
      followTournament(article);
      var pending = null;
      window.addEventListener("resize", function () {
        clearTimeout(pending);
        pending = setTimeout(function () { drawBracketLines(article); }, 100);
      });
    }
    refreshList();
  });
})();
