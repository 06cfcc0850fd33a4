/* The game viewer: a replay of a moon-transcript/1 record, step by step (buttons, arrow
   keys, a hand to jump to), or a running single match followed live from its public
   events (hands face down, the discard hidden). A game nobody may see yet only shows
   its status, and reloads into the replay once it is public. */
(function () {
  "use strict";

  var D = function (tile, cls) { return window.Moon.domino(tile, cls); };
  var BACK = function (cls) { return window.Moon.back(cls); };

  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { node.textContent = attrs[k]; }
      else if (k === "cls") { node.className = attrs[k]; }
      else { node.setAttribute(k, attrs[k]); }
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) { return; }
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function contractText(trump) {
    if (trump === null || trump === undefined) { return ""; }
    if (trump === "doubles") { return "doubles are trumps"; }
    if (trump === "none") { return "no trump"; }
    return trump + "s are trumps";
  }

  /* ---------- the game model: transcript hands, or hands built from live events ---------- */

  function emptyHand(n) {
    return { n: n, first_bidder: null, deal: null, widow: null, bids: [], bidder: null, bid: null,
             trump: null, discard: null, tricks: [], tricks_won: null, made: null, points: null,
             scores: null, done: false };
  }

  function fromTranscript(rec) {
    var hands = (rec.hands || []).map(function (x, i) {
      return Object.assign(emptyHand(i + 1), x, { n: i + 1, done: true });
    });
    if (rec.partial_hand) {
      hands.push(Object.assign(emptyHand(hands.length + 1), rec.partial_hand,
                               { n: hands.length + 1, done: false, scores: null }));
    }
    return { players: rec.players, seats: rec.seats, hands: hands, over: true,
             final: rec.final, winner: rec.winner, end: rec.end, forfeit: rec.forfeit || null,
             faults: rec.faults || [], live: false };
  }

  function liveGame(players) {
    return { players: players, seats: [], hands: [], over: false, final: null, winner: null,
             end: null, forfeit: null, faults: [], live: true };
  }

  function handOf(game, n) {
    while (game.hands.length < n) { game.hands.push(emptyHand(game.hands.length + 1)); }
    return game.hands[n - 1];
  }

  function applyLive(game, s) {
    var hand;
    if (s.k === "started") {
      game.players = s.players;
      game.seats = s.seats;
    } else if (s.k === "bid") {
      hand = handOf(game, s.hand);
      if (!hand.bids.length) { hand.first_bidder = s.seat; }
      hand.bids.push({ seat: s.seat, bid: s.bid });
    } else if (s.k === "trump") {
      hand = handOf(game, s.hand);
      hand.trump = s.trump;
      hand.bidder = s.seat;
    } else if (s.k === "discard") {
      hand = handOf(game, s.hand);
      hand.discard = "hidden";
      hand.bidder = s.seat;
    } else if (s.k === "play") {
      hand = handOf(game, s.hand);
      var last = hand.tricks[hand.tricks.length - 1];
      if (!last || last.plays.length >= game.players) {
        last = { leader: s.seat, plays: [], winner: null };
        hand.tricks.push(last);
      }
      last.plays.push({ seat: s.seat, tile: s.tile });
      if (s.winner !== null && s.winner !== undefined) { last.winner = s.winner; }
    } else if (s.k === "hand") {
      hand = handOf(game, s.hand);
      hand.bidder = s.bidder;
      hand.bid = s.bid;
      hand.trump = s.trump;
      hand.tricks_won = s.tricks_won;
      hand.made = s.made;
      hand.points = s.points;
      hand.scores = s.scores;
      hand.done = true;
    } else if (s.k === "fault") {
      game.faults.push(s);
    } else if (s.k === "finished") {
      game.over = true;
      game.final = s.final;
      game.winner = s.winner;
      game.end = s.end;
      game.forfeit = s.forfeit || null;
    }
  }

  var SPEEDS = [0.5, 1, 2, 4, 8];

  function savedSpeed() {
    var v = 2;
    try { v = parseFloat(window.localStorage.getItem("moonSpeed")) || 2; } catch (e) { v = 2; }
    return SPEEDS.indexOf(v) >= 0 ? v : 2;
  }

  /* Who won, or who shares first place; a forfeit is named as one, never as a draw. */
  function outcomeText(game, sides) {
    var won = game.winner !== null && game.winner !== undefined;
    var text = won ? sides[game.winner] + " won" : "";
    var level = [];
    if (!won) {
      var best = Math.max.apply(null, (game.final || []).filter(function (v, i) {
        return !game.forfeit || sideOf(game, game.forfeit.seat) !== i;
      }));
      level = sides.filter(function (name, i) {
        return (game.final || [])[i] === best && !(game.forfeit && sideOf(game, game.forfeit.seat) === i);
      });
      text = level.join(" and ") + " share first place";
    }
    if (game.end === "forfeit" && game.forfeit) {
      text = game.seats[game.forfeit.seat] + " forfeited; " +
        (won ? text + " by forfeit" : level.join(" and ") + " won by forfeit, level (first place shared)");
    } else if (!won) {
      text = "a draw: " + text;
    }
    return text;
  }

  /* The bid that won so far: the highest number bid (bids only go up). */
  function leadingBid(hand) {
    var best = null;
    hand.bids.forEach(function (b) {
      if (b.bid !== "pass" && (best === null || b.bid > best.bid)) { best = b; }
    });
    return best;
  }

  /* ---------- steps ---------- */

  function buildSteps(game) {
    var steps = [];
    game.hands.forEach(function (hand, hi) {
      if (hand.deal) { steps.push({ h: hi, kind: "deal" }); }
      if (hand.bids.length) { steps.push({ h: hi, kind: "auction" }); }
      if (hand.trump !== null || hand.discard) { steps.push({ h: hi, kind: "contract" }); }
      hand.tricks.forEach(function (t, ti) { steps.push({ h: hi, kind: "trick", t: ti }); });
      if (hand.scores) { steps.push({ h: hi, kind: "score" }); }
    });
    if (game.over) { steps.push({ h: Math.max(0, game.hands.length - 1), kind: "end" }); }
    return steps;
  }

  function sideOf(game, seat) { return game.players === 4 ? seat % 2 : seat; }

  function sideNames(game) {
    var s = game.seats;
    var team = function (a, b) { return a === b ? a : a + " & " + b; };
    if (game.players === 4) { return [team(s[0], s[2]), team(s[1], s[3])]; }
    return s.slice();
  }

  /* What the table shows at one step: tiles left per seat, tricks won, scores. */
  function tableAt(game, step) {
    var hand = game.hands[step.h];
    var n = game.players;
    var order = ["deal", "auction", "contract", "trick", "score", "end"].indexOf(step.kind);
    var tricksShown = step.kind === "trick" ? step.t + 1 : order >= 4 ? hand.tricks.length : 0;
    var played = {};
    for (var ti = 0; ti < tricksShown; ti++) {
      hand.tricks[ti].plays.forEach(function (p) { played[p.tile] = true; });
    }
    var won = [];
    for (var s = 0; s < n; s++) { won.push(0); }
    for (ti = 0; ti < tricksShown; ti++) {
      var w = hand.tricks[ti].winner;
      if (w !== null && w !== undefined) { won[w] += 1; }
    }
    var tiles = [];
    var counts = [];
    for (s = 0; s < n; s++) {
      var mine = [];
      if (hand.deal) {
        mine = hand.deal[s].slice();
        if (order >= 2 && s === hand.bidder && hand.widow) {
          mine.push(hand.widow);
          mine = mine.filter(function (t) { return t !== hand.discard; });
          mine.sort(function (a, b) { return tileRank(b) - tileRank(a); });
        }
        mine = mine.filter(function (t) { return !played[t]; });
      }
      tiles.push(mine);
      var playedBy = 0;
      for (ti = 0; ti < tricksShown; ti++) {
        hand.tricks[ti].plays.forEach(function (p) { if (p.seat === s) { playedBy += 1; } });
      }
      counts.push(Math.max(0, 7 - playedBy));
    }
    var before = step.h > 0 && game.hands[step.h - 1].scores ? game.hands[step.h - 1].scores : null;
    var scores = order >= 4 && hand.scores ? hand.scores : before;
    if (!scores) {
      scores = [];
      for (s = 0; s < (n === 4 ? 2 : n); s++) { scores.push(0); }
    }
    return { hand: hand, tiles: tiles, counts: counts, won: won, scores: scores, order: order };
  }

  function tileRank(t) {
    var e = String(t).split("-");
    var a = parseInt(e[0], 10), b = parseInt(e[1], 10);
    return a * (a + 1) / 2 + b;
  }

  /* ---------- drawing ---------- */

  function Viewer(root, game) {
    this.root = root;
    this.game = game;
    this.steps = buildSteps(game);
    this.index = 0;
    this.follow = game.live;  // live: stay on the newest step until the user steps back
    this.build();
  }

  Viewer.prototype.build = function () {
    var self = this;
    var root = this.root;
    root.innerHTML = "";
    this.where = h("span", { cls: "v-where", "aria-live": "polite" });
    this.handSelect = h("select", { cls: "v-hand", "aria-label": "jump to hand" });
    var ICONS = { first: "M5 5h2.5v14H5z M19 5 9 12l10 7z", prev: "M16 5 6 12l10 7z",
                  next: "M8 5l10 7-10 7z", last: "M5 5l10 7-10 7z M16.5 5H19v14h-2.5z" };
    function button(go, label, title) {
      var b = h("button", { type: "button", "data-go": go, title: title, "aria-label": title });
      var svg = window.Moon.svg("svg", { viewBox: "0 0 24 24", "class": "icon", "aria-hidden": "true" }, b);
      window.Moon.svg("path", { d: ICONS[go] }, svg);
      b.addEventListener("click", function () { self.go(go); });
      return b;
    }
    this.buttons = {
      first: button("first", "⏮", "first step (Home)"),
      prev: button("prev", "◀", "step back (←)"),
      next: button("next", "▶", "step forward (→)"),
      last: button("last", "⏭", "last step (End)")
    };
    this.handSelect.addEventListener("change", function () {
      self.goHand(parseInt(self.handSelect.value, 10));
    });
    // Autoplay: one step every 1/speed seconds, at the speed chosen (kept for the next
    // replay), until the end or a step by hand.
    this.playButton = h("button", { type: "button", cls: "v-play-toggle", "data-go": "play",
                                    title: "play the game step by step (space)", "aria-pressed": "false", text: "▶ play" });
    this.playButton.addEventListener("click", function () { self.togglePlay(); });
    this.speedSelect = h("select", { cls: "v-speed", "aria-label": "autoplay speed" });
    SPEEDS.forEach(function (v) {
      self.speedSelect.appendChild(h("option", { value: String(v), text: v + " step" + (v === 1 ? "" : "s") + "/s" }));
    });
    this.speedSelect.value = String(savedSpeed());
    this.speedSelect.addEventListener("change", function () {
      try { window.localStorage.setItem("moonSpeed", self.speedSelect.value); } catch (e) { /* private mode */ }
      if (self.timer) { self.play(); }
    });
    this.timer = null;
    var controls = h("div", { cls: "v-controls" }, [
      this.buttons.first, this.buttons.prev, this.where, this.buttons.next, this.buttons.last,
      this.game.live ? null : h("span", { cls: "v-autoplay" }, [this.playButton, this.speedSelect]),
      h("label", { cls: "v-hand-label" }, ["hand ", this.handSelect]),
      h("span", { cls: "v-hint", text: "← → step · PgUp PgDn hand · space play" })
    ]);
    this.table = h("div", { cls: "v-table players-" + this.game.players });
    this.seatBoxes = [];
    for (var s = 0; s < this.game.players; s++) {
      var box = h("div", { cls: "v-seat seat-" + s, "data-seat": String(s) });
      this.seatBoxes.push(box);
      this.table.appendChild(box);
    }
    this.center = h("div", { cls: "v-center" });
    this.table.appendChild(this.center);
    this.side = h("div", { cls: "v-side" });
    root.appendChild(controls);
    root.appendChild(h("div", { cls: "v-body" }, [this.table, this.side]));
    document.addEventListener("keydown", function (ev) {
      var tag = (ev.target && ev.target.tagName) || "";
      if (tag === "INPUT" || tag === "TEXTAREA" || ev.altKey || ev.ctrlKey || ev.metaKey) { return; }
      if (ev.key === " " && tag !== "SELECT" && tag !== "BUTTON" && !self.game.live) {
        ev.preventDefault();
        self.togglePlay();
        return;
      }
      var keys = { ArrowRight: "next", ArrowLeft: "prev", Home: "first", End: "last",
                   PageDown: "nexthand", PageUp: "prevhand" };
      var go = keys[ev.key];
      if (!go || (tag === "SELECT" && (go === "nexthand" || go === "prevhand"))) { return; }
      ev.preventDefault();
      self.go(go);
    });
    window.addEventListener("hashchange", function () { self.fromHash(); });
    document.querySelectorAll("a.jump[data-hand]").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        self.goHand(parseInt(a.getAttribute("data-hand"), 10));
        self.root.scrollIntoView({ behavior: "smooth", block: "start" });
      });
    });
  };

  Viewer.prototype.speed = function () {
    return parseFloat(this.speedSelect.value) || 1;
  };

  Viewer.prototype.play = function () {
    var self = this;
    this.stop();
    if (this.index >= this.steps.length - 1) { this.index = 0; this.render(true); }  // again from the start
    this.timer = window.setInterval(function () {
      if (self.index >= self.steps.length - 1) { self.stop(); return; }
      self.index += 1;
      self.render(true);
    }, 1000 / this.speed());
    this.playButton.textContent = "❚❚ pause";
    this.playButton.setAttribute("aria-pressed", "true");
    this.root.setAttribute("data-playing", "yes");
  };

  Viewer.prototype.stop = function () {
    if (this.timer) { window.clearInterval(this.timer); }
    this.timer = null;
    this.playButton.textContent = "▶ play";
    this.playButton.setAttribute("aria-pressed", "false");
    this.root.setAttribute("data-playing", "no");
  };

  Viewer.prototype.togglePlay = function () {
    if (this.timer) { this.stop(); } else { this.play(); }
  };

  Viewer.prototype.update = function (game) {
    var atEnd = this.index >= this.steps.length - 1;
    this.game = game;
    this.steps = buildSteps(game);
    if (this.follow || atEnd) { this.index = Math.max(0, this.steps.length - 1); }
    this.render();
  };

  Viewer.prototype.go = function (where) {
    this.stop();  // a step by hand takes over from autoplay
    var last = this.steps.length - 1;
    var i = this.index;
    if (where === "next") { i = Math.min(last, i + 1); }
    else if (where === "prev") { i = Math.max(0, i - 1); }
    else if (where === "first") { i = 0; }
    else if (where === "last") { i = last; }
    else if (where === "nexthand" || where === "prevhand") {
      var hand = this.steps[i] ? this.steps[i].h : 0;  // 0-based; goHand takes 1-based
      var n = where === "nexthand" ? hand + 2 : (this.firstOf(hand) === i ? hand : hand + 1);
      this.goHand(Math.max(1, Math.min(this.game.hands.length, n)));
      return;
    }
    this.follow = this.game.live && i === last;
    this.index = i;
    this.render(true);
  };

  Viewer.prototype.firstOf = function (handIndex) {
    for (var i = 0; i < this.steps.length; i++) { if (this.steps[i].h === handIndex) { return i; } }
    return 0;
  };

  Viewer.prototype.goHand = function (n) {
    this.stop();
    this.index = this.firstOf(n - 1);
    this.follow = false;
    this.render(true);
  };

  Viewer.prototype.fromHash = function () {
    var m = /^#h(\d+)(?:t(\d+))?$/.exec(window.location.hash || "");
    if (!m) { return false; }
    var hand = parseInt(m[1], 10) - 1;
    var trick = m[2] ? parseInt(m[2], 10) - 1 : null;
    for (var i = 0; i < this.steps.length; i++) {
      var s = this.steps[i];
      if (s.h === hand && (trick === null || (s.kind === "trick" && s.t === trick))) {
        this.index = i;
        this.follow = false;
        this.render(false);
        return true;
      }
    }
    return false;
  };

  Viewer.prototype.render = function (setHash) {
    var game = this.game;
    var root = this.root;
    var steps = this.steps;
    var last = steps.length - 1;
    this.buttons.first.disabled = this.index <= 0;
    this.buttons.prev.disabled = this.index <= 0;
    this.buttons.next.disabled = this.index >= last;
    this.buttons.last.disabled = this.index >= last;
    // The hand menu.
    if (this.handSelect.options.length !== game.hands.length) {
      this.handSelect.innerHTML = "";
      game.hands.forEach(function (hand, i) {
        this.handSelect.appendChild(h("option", { value: String(i + 1), text: String(i + 1) + " of " + game.hands.length }));
      }, this);
    }
    if (!steps.length) {
      root.setAttribute("data-step", "-1");
      root.setAttribute("data-kind", "none");
      this.where.textContent = game.live ? "waiting for the first move…" : "no moves";
      this.center.innerHTML = "";
      this.renderSeats(null, null);
      this.side.innerHTML = "";
      return;
    }
    var step = steps[this.index];
    var view = tableAt(game, step);
    var hand = view.hand;
    this.handSelect.value = String(step.h + 1);
    root.setAttribute("data-step", String(this.index));
    root.setAttribute("data-steps", String(steps.length));
    root.setAttribute("data-kind", step.kind);
    root.setAttribute("data-hand", String(step.h + 1));
    root.setAttribute("data-trick", step.kind === "trick" ? String(step.t + 1) : "");
    var label = "Hand " + (step.h + 1) + " · ";
    label += step.kind === "deal" ? "the deal"
      : step.kind === "auction" ? "the auction"
      : step.kind === "contract" ? "the contract"
      : step.kind === "trick" ? "trick " + (step.t + 1) + " of 7"
      : step.kind === "score" ? "scored"
      : "game over";
    if (step.kind === "end") { label = "Game over"; }
    this.where.textContent = label + "  (" + (this.index + 1) + "/" + steps.length + ")";
    this.renderSeats(step, view);
    this.renderCenter(step, view);
    this.renderSide(step, view);
    if (setHash && !game.live && window.history && window.history.replaceState) {
      var hash = "#h" + (step.h + 1) + (step.kind === "trick" ? "t" + (step.t + 1) : "");
      window.history.replaceState(null, "", hash);
    }
  };

  Viewer.prototype.renderSeats = function (step, view) {
    var game = this.game;
    var names = game.seats;
    for (var s = 0; s < game.players; s++) {
      var box = this.seatBoxes[s];
      box.innerHTML = "";
      box.className = "v-seat seat-" + s;
      var head = h("div", { cls: "v-seat-head" }, [
        h("span", { cls: "v-name", text: names[s] || "seat " + s }),
        game.players === 4 ? h("span", { cls: "v-team", text: s % 2 === 0 ? "team A" : "team B" }) : null
      ]);
      box.appendChild(head);
      if (!view) { continue; }
      var hand = view.hand;
      var bidderNow = view.order >= 1 && (hand.bidder === s || (hand.bidder === null && view.order === 1 && leadingBid(hand) && leadingBid(hand).seat === s));
      if (bidderNow) {
        var bid = hand.bid !== null ? hand.bid : (leadingBid(hand) || {}).bid;
        head.appendChild(h("span", { cls: "v-bidder", text: "bid " + bid }));
        box.classList.add("is-bidder");
      }
      var side = sideOf(game, s);
      var stats = h("div", { cls: "v-stats" }, [
        h("span", { cls: "v-score", "data-score": String(view.scores[side]), text: "score " + view.scores[side] }),
        h("span", { cls: "v-won", text: view.won[s] + " trick" + (view.won[s] === 1 ? "" : "s") })
      ]);
      box.appendChild(stats);
      var tiles = h("div", { cls: "v-tiles" });
      if (hand.deal) {
        view.tiles[s].forEach(function (t) { tiles.appendChild(D(t)); });
      } else if (step.kind !== "end") {
        for (var k = 0; k < view.counts[s]; k++) { tiles.appendChild(BACK()); }
      }
      box.appendChild(tiles);
      if (step.kind === "trick") {
        var trick = hand.tricks[step.t];
        if (trick.winner === s) { box.classList.add("won-trick"); }
        if (trick.leader === s) { box.classList.add("led-trick"); }
      }
    }
  };

  Viewer.prototype.renderCenter = function (step, view) {
    var game = this.game;
    var hand = view.hand;
    var c = this.center;
    c.innerHTML = "";
    var names = game.seats;
    if (step.kind === "trick") {
      var trick = hand.tricks[step.t];
      var box = h("div", { cls: "v-trick players-" + game.players, "data-winner": trick.winner === null || trick.winner === undefined ? "" : String(trick.winner),
                           "data-leader": String(trick.leader) });
      trick.plays.forEach(function (p, i) {
        var cls = "v-play pos-" + p.seat + (p.seat === trick.winner ? " winner" : "");
        box.appendChild(h("div", { cls: cls, "data-seat": String(p.seat), "data-tile": p.tile }, [
          D(p.tile, p.seat === trick.winner ? "win" : ""),
          h("span", { cls: "v-play-name", text: (i === 0 ? "led by " : "") + names[p.seat] })
        ]));
      });
      c.appendChild(box);
      var caption = "Trick " + (step.t + 1) + ": " + names[trick.leader] + " led";
      if (trick.winner !== null && trick.winner !== undefined) { caption += "; " + names[trick.winner] + " won it"; }
      else { caption += "; in play"; }
      c.appendChild(h("p", { cls: "v-caption", text: caption }));
    } else if (step.kind === "deal") {
      c.appendChild(h("p", { cls: "v-caption big", text: "Hand " + hand.n + " dealt" }));
      if (hand.first_bidder !== null) {
        c.appendChild(h("p", { cls: "v-caption", text: names[hand.first_bidder] + " bids first" }));
      }
    } else if (step.kind === "auction") {
      var lead = leadingBid(hand);
      var who = hand.bidder !== null ? names[hand.bidder] + " won the auction with " + hand.bid
        : lead ? names[lead.seat] + " leads with " + lead.bid
        : hand.bids.length === game.players ? "Everyone passed: the hand is dealt again" : "Bidding…";
      c.appendChild(h("p", { cls: "v-caption big", text: who }));
    } else if (step.kind === "contract") {
      c.appendChild(h("p", { cls: "v-caption big", text: names[hand.bidder] + ": " + contractText(hand.trump) }));
      if (hand.discard && hand.discard !== "hidden") {
        c.appendChild(h("div", { cls: "v-widow" }, [h("span", { text: "took the widow " }), D(hand.widow),
                                                     h("span", { text: " and discarded " }), D(hand.discard)]));
      } else if (hand.discard === "hidden") {
        c.appendChild(h("p", { cls: "v-caption", text: "took the widow and discarded a tile (hidden until the game is over)" }));
      }
    } else if (step.kind === "score") {
      var sides = sideNames(game);
      var res = h("div", { cls: "v-hand-result", "data-scores": (hand.scores || []).join(","),
                           "data-points": (hand.points || []).join(",") });
      var title = hand.bidder === null ? "Everyone passed: no score"
        : names[hand.bidder] + (hand.made ? " made " : " was set on ") + hand.bid;
      res.appendChild(h("p", { cls: "v-caption big", text: title }));
      var list = h("ul", { cls: "v-points" });
      sides.forEach(function (name, i) {
        var pts = hand.points ? hand.points[i] : 0;
        list.appendChild(h("li", {}, [h("b", { text: name }), " " + (pts >= 0 ? "+" : "") + pts + " → " + hand.scores[i]]));
      });
      res.appendChild(list);
      c.appendChild(res);
    } else if (step.kind === "end") {
      var sides2 = sideNames(game);
      var end = h("div", { cls: "v-end", "data-final": (game.final || []).join(",") });
      end.appendChild(h("p", { cls: "v-caption big", text: "Game over: " + outcomeText(game, sides2) }));
      var l2 = h("ul", { cls: "v-points" });
      sides2.forEach(function (name, i) { l2.appendChild(h("li", {}, [h("b", { text: name }), " " + (game.final || [])[i]])); });
      end.appendChild(l2);
      if (game.end === "hand_limit") { end.appendChild(h("p", { cls: "v-caption", text: "adjudicated at the hand limit" })); }
      if (game.forfeit) { end.appendChild(h("p", { cls: "v-caption", text: names[game.forfeit.seat] + " forfeited: " + game.forfeit.reason })); }
      c.appendChild(end);
    }
  };

  Viewer.prototype.renderSide = function (step, view) {
    var game = this.game;
    var hand = view.hand;
    var names = game.seats;
    var side = this.side;
    side.innerHTML = "";
    // The auction and the contract.
    var auction = h("section", { cls: "v-box v-auction" }, [h("h3", { text: "Hand " + hand.n + ": auction" })]);
    var bids = h("ol", { cls: "v-bids" });
    if (view.order >= 1) {
      hand.bids.forEach(function (b) {
        bids.appendChild(h("li", { "data-seat": String(b.seat) }, [h("b", { text: names[b.seat] }), " " + (b.bid === "pass" ? "pass" : "bid " + b.bid)]));
      });
    }
    auction.appendChild(bids);
    if (view.order >= 2 && hand.trump !== null) {
      var bid = hand.bid !== null ? hand.bid : (leadingBid(hand) || {}).bid;
      auction.appendChild(h("p", { cls: "v-contract", text: "Contract: " + names[hand.bidder] + " " + bid + ", " + contractText(hand.trump) }));
    }
    if (hand.widow && (view.order >= 2 || !game.live)) {
      var widow = h("p", { cls: "v-widow-line" }, ["Widow ", D(hand.widow, "small")]);
      if (view.order >= 2 && hand.discard && hand.discard !== "hidden") { widow.appendChild(document.createTextNode(" · discard ")); widow.appendChild(D(hand.discard, "small")); }
      auction.appendChild(widow);
    }
    side.appendChild(auction);
    // The tricks of this hand so far.
    var shown = step.kind === "trick" ? step.t + 1 : view.order >= 4 ? hand.tricks.length : 0;
    if (shown) {
      var tricks = h("section", { cls: "v-box v-tricks" }, [h("h3", { text: "Tricks" })]);
      var ol = h("ol", {});
      for (var i = 0; i < shown; i++) {
        var t = hand.tricks[i];
        var li = h("li", { cls: i === shown - 1 && step.kind === "trick" ? "current" : "" });
        t.plays.forEach(function (p) { li.appendChild(D(p.tile, "tiny" + (p.seat === t.winner ? " win" : ""))); });
        li.appendChild(h("span", { cls: "v-trick-winner", text: t.winner !== null && t.winner !== undefined ? names[t.winner] : "…" }));
        ol.appendChild(li);
      }
      tricks.appendChild(ol);
      side.appendChild(tricks);
    }
    // Scores after each hand so far.
    var sides = sideNames(game);
    var scores = h("section", { cls: "v-box v-scores" }, [h("h3", { text: "Scores" })]);
    var table = h("table", {});
    var head = h("tr", {}, [h("th", { text: "hand" })]);
    sides.forEach(function (s) { head.appendChild(h("th", { text: s })); });
    table.appendChild(h("thead", {}, [head]));
    var body = h("tbody", {});
    var upTo = view.order >= 4 ? step.h : step.h - 1;
    for (var k = 0; k <= upTo && k < game.hands.length; k++) {
      var hk = game.hands[k];
      if (!hk.scores) { continue; }
      var tr = h("tr", { "data-hand": String(k + 1), cls: k === step.h ? "current" : "" }, [h("td", { text: String(k + 1) })]);
      hk.scores.forEach(function (v) { tr.appendChild(h("td", { text: String(v) })); });
      body.appendChild(tr);
    }
    table.appendChild(body);
    scores.appendChild(table);
    side.appendChild(scores);
  };

  /* ---------- the page ---------- */

  function liveFollow(article, viewerRoot) {
    var id = article.getAttribute("data-id");
    var players = parseInt(article.getAttribute("data-players"), 10) || 3;
    var game = liveGame(players);
    var viewer = null;
    var live = document.getElementById("live");
    var source = new EventSource("/game/" + encodeURIComponent(id) + "/events");
    var pending = false;
    function redraw() {
      pending = false;
      if (!game.seats.length) { return; }
      if (!viewer) { viewer = new Viewer(viewerRoot, game); }
      viewer.update(game);
    }
    source.addEventListener("open", function () { if (live) { live.hidden = false; live.textContent = "live"; live.className = "live"; } });
    source.addEventListener("step", function (ev) {
      var s = JSON.parse(ev.data);
      applyLive(game, s);
      if (!pending) { pending = true; window.requestAnimationFrame(redraw); }
      if (s.k === "finished") {
        source.close();
        setTimeout(function () { window.location.reload(); }, 1500);
      }
    });
    source.addEventListener("end", function () { source.close(); });
    source.addEventListener("gone", function () { source.close(); });
    source.addEventListener("busy", function () {
      source.close();
      if (live) { live.hidden = false; live.textContent = "too many live pages"; live.className = "live busy"; }
    });
    source.addEventListener("error", function () {
      if (live) { live.textContent = "reconnecting"; live.className = "live reconnecting"; }
    });
  }

  function statusFollow(article) {
    var id = article.getAttribute("data-id");
    var source = new EventSource("/game/" + encodeURIComponent(id) + "/events");
    source.addEventListener("status", function (ev) {
      var s = JSON.parse(ev.data).status;
      var badge = document.querySelector("#g-status .badge");
      if (badge && s) {
        badge.textContent = s;
        badge.className = "badge " + s;
        article.setAttribute("data-status", s);
      }
    });
    source.addEventListener("ready", function () {
      source.close();
      window.location.reload();
    });
    source.addEventListener("end", function () { source.close(); });
    source.addEventListener("gone", function () { source.close(); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var article = document.getElementById("game");
    if (!article) { return; }
    var mode = article.getAttribute("data-mode");
    var root = document.getElementById("viewer");
    if (mode === "replay" && root) {
      var rec = JSON.parse(document.getElementById("transcript").textContent);
      var viewer = new Viewer(root, fromTranscript(rec));
      if (!viewer.fromHash()) { viewer.render(false); }
      window.moonViewer = viewer;
    } else if (mode === "live" && root) {
      liveFollow(article, root);
    } else if (mode === "status") {
      var st = article.getAttribute("data-status");
      if (st !== "failed") { statusFollow(article); }
    }
  });
})();
