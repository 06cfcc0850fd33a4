"""Bots with special behaviours for the end-to-end tests, run as `netbots:ClassName`.

Each runs in its own `moonshot bot run` process (tests/net is on its PYTHONPATH).
They print marker lines that the tests wait for; the SDK's own log says the rest.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from bots.pimc import PimcPlayer
from bots.player import decision_rng
from clients.bot import Bot
from clients.builtin import GreedyBot, RandomBot
from moon import Action, Observation
from moon.actions import ACTIONS
from moon.errors import MoonError
from moon.observation import Phase
from moon.sampling import Sampler


class IllegalBot(Bot):
    """Always answers with an action that is not legal (the lowest id that is not)."""

    name = "illegal"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The first action of the whole table that `legal` does not hold."""
        ok = {a.id for a in legal}
        return next(a for i, a in sorted(ACTIONS.items()) if i not in ok)


class NonActionBot(Bot):
    """Answers with the integer 9999, not an action (a bug a bot author makes)."""

    name = "non-action"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """9999, whatever is legal."""
        return 9999  # type: ignore[return-value]


class RaisingBot(Bot):
    """Raises on every decision."""

    name = "raising"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Never an answer."""
        raise ValueError(f"no idea what to do with {len(legal)} actions")


class SlowBot(Bot):
    """Answers legally, but only after `DELAY_S`, longer than the tests' per-move limit."""

    name = "slow"
    DELAY_S = 1.2

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """legal[0], late."""
        time.sleep(self.DELAY_S)
        return legal[0]


class SlowGreedyBot(GreedyBot):
    """GreedyBot (deterministic given the observation) that takes a little time per move,
    so a match lasts long enough to be killed in the middle."""

    name = "slow-greedy"
    DELAY_S = 0.015

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """GreedyBot's choice, after a short pause."""
        time.sleep(self.DELAY_S)
        return super().act(obs, legal)


_decisions = 0
_lock = threading.Lock()


class HangBot(GreedyBot):
    """Plays like GreedyBot, then hangs for good on its `HANG_AT`-th decision of the process.

    Before hanging it prints `HANGING seat S hand H phase P`, so a test knows the
    bot holds an unanswered request and can kill the process at that moment.
    """

    name = "hang"
    HANG_AT = 4

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """GreedyBot's choice, except on the HANG_AT-th call: never returns."""
        global _decisions
        with _lock:
            _decisions += 1
            n = _decisions
        if n == self.HANG_AT:
            print(f"HANGING seat {obs.seat} hand {obs.hand_number} phase {obs.phase.name}",
                  flush=True)
            sys.stdout.flush()
            while True:
                time.sleep(3600)
        return super().act(obs, legal)


class ThinkingBot(GreedyBot):
    """GreedyBot that thinks `DELAY_S` before every move (many matches wait at once)."""

    name = "thinking"
    DELAY_S = 0.2

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The greedy move, after a pause."""
        time.sleep(self.DELAY_S)
        return super().act(obs, legal)


class FlakyBot(GreedyBot):
    """Plays like GreedyBot, but: illegal answers on its 3rd and 6th decisions of the
    process and on every one from the 10th; 1.5 s on its 4th (over a 1 s move, so the
    bank pays); 3 s on its 8th, long enough to kill the match's worker meanwhile. It
    prints `FLAKY n` as it takes up decision n."""

    name = "flaky"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """See the class."""
        global _decisions
        with _lock:
            _decisions += 1
            n = _decisions
        print(f"FLAKY {n}", flush=True)
        if n in (3, 6) or n >= 10:
            ok = {a.id for a in legal}
            return next(a for i, a in sorted(ACTIONS.items()) if i not in ok)
        if n in (4, 8):
            time.sleep(1.5 if n == 4 else 3.0)
        return super().act(obs, legal)


class OnceBot(GreedyBot):
    """Plays like GreedyBot, but answers each decision once: asked the same question
    again (a resumed match sends its request again, with the same id), it keeps quiet for
    60 s, as a bot that skips request ids it has answered would. It prints `ONCE AGAIN`
    when that happens."""

    name = "once"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.seen: set[str] = set()

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """See the class."""
        key = repr(obs)
        if key in self.seen:
            print("ONCE AGAIN", flush=True)
            time.sleep(60)
        self.seen.add(key)
        return super().act(obs, legal)


class EndAwareBot(GreedyBot):
    """GreedyBot that prints a marker line when its match's end reaches it (`game_over`)."""

    name = "end-aware"

    def game_over(self, result: dict[str, object]) -> None:
        """Say which match ended, as the test expects."""
        print(f"game over: {result.get('end')} placement {result.get('placement')}",
              flush=True)


class GatedRandomBot(RandomBot):
    """RandomBot that takes no decision until a file named `gate` exists in its working
    directory (the stack's folder): connected all along, its games wait for the test to
    open the gate (the clock runs meanwhile: give it a long bank)."""

    name = "gated-random"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """RandomBot's choice, once the gate is open."""
        while not Path("gate").exists():
            time.sleep(0.05)
        return super().act(obs, legal)


class _KnownSampler(Sampler):
    """Deals of the hidden tiles with one seat's hand known (a partner's, read off another
    table of the board): that seat holds exactly those tiles it has not played yet."""

    __slots__ = ("_known", "_q")

    def __init__(self, obs: Observation, q: int, hand: int) -> None:
        super().__init__(obs)
        known = hand & ~self.played[q]
        self._q, self._known = q, known
        self._bits = [b for b in self._bits if not b & known]
        self._hidden &= ~known
        sizes = self.sizes
        sizes[q] = 0
        cuts, pos = [], 0
        for size, (_, _, banned) in zip(sizes, self._cuts, strict=True):
            cuts.append((pos, pos + size, banned & ~known))
            pos += size
        self._cuts = cuts

    @staticmethod
    def fits(obs: Observation, q: int, hand: int) -> bool:
        """The known hand is still what seat q holds (it took no widow)."""
        played = Sampler(obs).played[q]
        return (hand & played) == played and \
            bin(hand & ~played).count("1") == obs.hand_sizes[q]

    def deal(self, rng: random.Random) -> list[int]:
        """The other places drawn, the known seat's as known."""
        masks = super().deal(rng)
        masks[self._q] = self._known
        return masks


class _KnowingPimc:
    """PIMC (`bots.pimc`) whose deals hold a known hand where it knows one."""

    def __init__(self, samples: int) -> None:
        self.player = PimcPlayer(samples=samples, solve=3)
        self.known: tuple[int, int] | None = None  # (seat, initial hand mask)

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """The legal action with the best total over deals that hold the known hand."""
        p = self.player
        rng = decision_rng(obs, seed)
        if self.known is None or not _KnownSampler.fits(obs, *self.known):
            values = p.values(obs, legal, rng)
        else:
            sampler = _KnownSampler(obs, *self.known)
            if obs.phase is Phase.PLAY:
                values = p._play(obs, legal, sampler, rng)
            elif obs.phase is Phase.BID:
                values = p._bid(obs, legal, sampler, rng)
            elif obs.phase is Phase.DISCARD:
                values = p._discard(obs, legal, sampler, rng)
            else:
                values = p._trump(obs, legal, sampler, rng)
        return legal[max(range(len(legal)), key=lambda i: values[i])]


class SharingBot(RandomBot):
    """A colluder: writes each hand it is dealt to `$MOONSHOT_SHARE_DIR/<me>.jsonl` and
    reads its partner's (`$MOONSHOT_SHARE_PARTNER`) of the same deal, which the partner
    holds at another table of the board (the partner's hand: disjoint from its own, the
    same first bidder, dealt in the last minute). Knowing it, it searches (PIMC on deals
    that hold that hand for the partner's seat); not knowing it, it plays as RandomBot.
    A caricature of a pair that gains from what it shares, so that a few minutes of play
    show it (a pair that gains as much as issue 29's engine figure needs about a hundred
    shared boards: bench/collusion.py); the audit should find exactly such a pair."""

    name = "sharing"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.dir = Path(os.environ["MOONSHOT_SHARE_DIR"])
        self.me = os.environ["MOONSHOT_SHARE_ME"]
        self.partner = os.environ["MOONSHOT_SHARE_PARTNER"]
        self.search = _KnowingPimc(samples=16)
        self.hand_key: tuple[int, int, int] | None = None
        self.seed = self.rng.getrandbits(32)

    def _partner_hand(self, obs: Observation, mine: int, at: float
                      ) -> tuple[int, int] | None:
        """The partner's hand of this deal: written within a second or two of this one
        (the tables of a board start together), disjoint from it, the same first bidder."""
        path = self.dir / f"{self.partner}.jsonl"
        try:
            lines = path.read_text().splitlines()[-20:]
        except OSError:
            return None
        found = []
        for line in lines:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if (abs(e["t"] - at) < 1.5 and e["first"] == obs.first_bidder
                    and e["number"] == obs.hand_number and e["seat"] != obs.seat
                    and not e["hand"] & mine):
                found.append((abs(e["t"] - at), int(e["seat"]), int(e["hand"])))
        return min(found)[1:] if found else None

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """At random, unless the partner's hand of this deal is known."""
        mine = sum(1 << t.index for t in obs.hand)
        key = (obs.first_bidder, obs.hand_number, mine)
        if obs.phase is Phase.BID and key != self.hand_key:
            self.hand_key = key
            at = time.time()
            with open(self.dir / f"{self.me}.jsonl", "a") as fh:
                fh.write(json.dumps({"t": at, "first": obs.first_bidder,
                                     "number": obs.hand_number, "seat": obs.seat,
                                     "hand": mine}) + "\n")
            self.search.known = None
            end = time.monotonic() + 0.6  # the partner's table is dealt at once too
            while self.search.known is None and time.monotonic() < end:
                self.search.known = self._partner_hand(obs, mine, at)
                if self.search.known is None:
                    time.sleep(0.05)
        if self.search.known is None or len(legal) == 1:
            return super().act(obs, legal)
        try:
            return self.search.decide(obs, legal, self.seed)
        except MoonError:  # not the partner's hand after all: play on without it
            self.search.known = None
            return super().act(obs, legal)
