"""The built-in bots: `random` and `greedy`."""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Sequence

from clients.bot import Bot
from moon import Action, ActionKind, Observation, Phase, Tile
from moon.actions import MOON
from moon.contracts import FOLLOW, NO_TRUMP, POWER, TRUMP_MASK
from moon.tiles import ALL_TILES

__all__ = ["BUILTIN", "GreedyBot", "RandomBot", "estimate_tricks", "load_bot"]


class RandomBot(Bot):
    """Uniform over the legal actions, except that it never bids 21.

    A random moon bid fails nearly always and only drags every score down, so
    games between random bots would hardly end.
    """

    name = "random"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """A uniformly random legal action other than `bid 21`."""
        choices = [a for a in legal if not (a.kind is ActionKind.BID and a.value == MOON)]
        return self.rng.choice(choices or list(legal))


def _trump_order(contract: int) -> list[int]:
    """Trump tile indices of a contract, highest first."""
    mask = TRUMP_MASK[contract]
    # A trump's power when led under its own contract ranks it among trumps.
    lead = POWER[contract]
    tiles = [i for i in range(28) if mask >> i & 1]
    return sorted(tiles, key=lambda i: -lead[i][i])


_TRUMP_ORDER = [_trump_order(c) for c in range(9)]


def estimate_tricks(hand: Sequence[Tile], contract: int, gone: int = 0) -> float:
    """A rough count of the tricks `hand` takes under `contract`.

    Trumps held in an unbroken run from the top of what is left count one each,
    other trumps most of one; doubles off trump count most of one (they head
    their suit); a tile right below a held double counts a little. `gone` is a
    mask of tiles already out of play.
    """
    held = 0
    for t in hand:
        held |= 1 << t.index
    est = 0.0
    if contract != NO_TRUMP:
        run = True
        for i in _TRUMP_ORDER[contract]:
            if gone >> i & 1:
                continue
            if held >> i & 1:
                est += 1.0 if run else 0.6
            else:
                run = False
    trumps = TRUMP_MASK[contract] if contract != NO_TRUMP else 0
    for t in hand:
        if trumps >> t.index & 1:
            continue
        if t.is_double:
            est += 0.8
        elif not t.is_double and t.high >= 5:
            partner = ALL_TILES[t.high * (t.high + 1) // 2 + t.high]
            if held >> partner.index & 1:
                est += 0.4
    return est


def _length(hand: Sequence[Tile], contract: int) -> int:
    if contract == NO_TRUMP:
        return 0
    mask = TRUMP_MASK[contract]
    return sum(1 for t in hand if mask >> t.index & 1)


def _best_contract(hand: Sequence[Tile]) -> tuple[int, float]:
    """The contract it is longest in (ties by estimated tricks), and that estimate."""
    best = max(range(9), key=lambda c: (_length(hand, c), estimate_tricks(hand, c), -c))
    return best, estimate_tricks(hand, best)


class GreedyBot(Bot):
    """A simple, honest player: bids its estimated tricks, trumps its longest suit,
    takes tricks as cheaply as it can and throws its lowest tiles otherwise."""

    name = "greedy"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Pick by phase: bid, discard, trumps or a play."""
        if obs.phase is Phase.BID:
            return self._bid(obs, legal)
        if obs.phase is Phase.DISCARD:
            return self._discard(obs, legal)
        if obs.phase is Phase.TRUMP:
            return self._trump(obs, legal)
        return self._play(obs, legal)

    # -- auction ---------------------------------------------------------

    def _bid(self, obs: Observation, legal: Sequence[Action]) -> Action:
        _, est = _best_contract(obs.hand)
        if obs.rules.has_widow:
            est += 0.3  # the widow usually improves the hand a little
        if obs.players == 4:
            est += 1.0  # a partner takes some tricks too
        bids = {a.value: a for a in legal if a.kind is ActionKind.BID}
        if est >= 7.5 and MOON in bids:
            return bids[MOON]
        want = min(int(est), 7)
        options = [v for v in bids if v != MOON and v <= want]
        if options:
            return bids[max(options)]
        passes = [a for a in legal if a.kind is ActionKind.PASS]
        if passes:
            return passes[0]
        return min((a for a in legal if a.kind is ActionKind.BID), key=lambda a: a.value)

    # -- widow and trumps ----------------------------------------------

    def _discard(self, obs: Observation, legal: Sequence[Action]) -> Action:
        hand = list(obs.hand)
        fixed = obs.contract

        def score(a: Action) -> tuple[float, float]:
            rest = [t for t in hand if t != a.tile]
            if fixed is not None:
                return estimate_tricks(rest, fixed), -_pips(a.tile)
            _, est = _best_contract(rest)
            return est, -_pips(a.tile)

        return max(legal, key=score)

    def _trump(self, obs: Observation, legal: Sequence[Action]) -> Action:
        best, _ = _best_contract(obs.hand)
        for a in legal:
            if a.value == best:
                return a
        return legal[0]

    # -- play --------------------------------------------------------------

    def _play(self, obs: Observation, legal: Sequence[Action]) -> Action:
        contract = obs.contract if obs.contract is not None else NO_TRUMP
        gone = 0
        for trick in obs.tricks:
            for p in trick.plays:
                gone |= 1 << p.tile.index
        for p in obs.current:
            gone |= 1 << p.tile.index
        if not obs.current:
            return self._lead(obs, legal, contract, gone)
        led = obs.current[0].tile.index
        power = POWER[contract][led]
        best = max(obs.current, key=lambda p: power[p.tile.index])
        best_power = power[best.tile.index]
        last = len(obs.current) == obs.players - 1
        partner_winning = obs.players == 4 and best.seat % 2 == obs.seat % 2
        if partner_winning and (last or best_power >= 100 or best.tile.is_double):
            return min(legal, key=lambda a: self._cost(a.tile, contract))
        winners = [a for a in legal if power[a.tile.index] > best_power]
        if winners:
            return min(winners, key=lambda a: power[a.tile.index])
        return min(legal, key=lambda a: self._cost(a.tile, contract))

    def _lead(self, obs: Observation, legal: Sequence[Action], contract: int,
              gone: int) -> Action:
        held = {a.tile.index: a for a in legal}
        if contract != NO_TRUMP:
            for i in _TRUMP_ORDER[contract]:
                if gone >> i & 1:
                    continue
                if i in held:
                    return held[i]  # the top trump left: draw trumps with it
                break
        trumps = TRUMP_MASK[contract] if contract != NO_TRUMP else 0
        doubles = [a for a in legal if a.tile.is_double and not trumps >> a.tile.index & 1]
        if doubles:
            return max(doubles, key=lambda a: a.tile.high)
        # A tile that heads its suit among what is left also wins unless trumped.
        for a in sorted(legal, key=lambda a: -_pips(a.tile)):
            if trumps >> a.tile.index & 1:
                continue
            suit = FOLLOW[contract][a.tile.index]
            power = POWER[contract][a.tile.index]
            rivals = suit & ~gone & ~(1 << a.tile.index)
            if all(power[i] < power[a.tile.index] for i in range(28) if rivals >> i & 1):
                return a
        return min(legal, key=lambda a: self._cost(a.tile, contract))

    @staticmethod
    def _cost(tile: Tile, contract: int) -> float:
        """How much giving this tile away hurts: trumps and doubles most."""
        cost = float(_pips(tile))
        if contract != NO_TRUMP and TRUMP_MASK[contract] >> tile.index & 1:
            cost += 100
        if tile.is_double:
            cost += 20
        return cost


def _pips(tile: Tile) -> int:
    return tile.high + tile.low


BUILTIN: dict[str, type[Bot]] = {"random": RandomBot, "greedy": GreedyBot}


def load_bot(spec: str) -> type[Bot]:
    """A bot class from `random`, `greedy` or `package.module:ClassName` (imported from the
    current directory or the Python path)."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        close = difflib.get_close_matches(spec, BUILTIN, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown bot {spec!r}{hint}: use {', '.join(BUILTIN)} or MODULE:CLASS")
    # Like `python -m`, look in the current directory first: a bot author runs
    # `moonshot ... --bot mybot:MyBot` next to mybot.py.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import bot module {module_name!r}: {exc}") from exc
    cls = getattr(module, attr, None)
    if isinstance(cls, type) and issubclass(cls, Bot) and cls is not Bot:
        return cls
    bots = sorted(name for name, value in vars(module).items()
                  if isinstance(value, type) and issubclass(value, Bot) and value is not Bot)
    there = (f"its bot classes: {', '.join(bots)}" if bots
             else "it has no subclass of clients.bot.Bot")
    if cls is None:
        raise ValueError(f"module {module_name!r} has no class {attr!r} ({there})")
    what = "is the base class itself" if cls is Bot else "is not a subclass of clients.bot.Bot"
    raise ValueError(f"{spec!r} {what} ({there})")
