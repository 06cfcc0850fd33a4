"""The plan of a test of a change: candidate C against baseline B on paired boards.

A test (`ChangeSpec`) names C, B, the pool (3p or 2v2), the opponents and a
seed. Board k is played twice (`board_games`): once by C, once by B, in the
same seat position with the same opponents in the same seats (2v2: the same
house partner against the same house team), on the same deal. Seat positions
rotate over boards: 3p C/B take position k % 3 with the two opponents'
order swapped every third board (all six seatings in six boards); 2v2 C/B
take seat k % 4 with the opponents' order swapped every fourth board.

It plans like a tournament format (`tournaments.plan`): `start` gives the
first games and a state (a JSON object), `feed` folds newly finished result
rows into it and gives the games to create now, so the scheduler's
machinery can drive it; `stop` ends it early. The rules of the state machine:

- At most `in_flight` pairs are in flight (started, not both games recorded):
  the caller sets it from the bots' capacity.
- A pair counts once both its games are recorded, and pairs count in board
  order: a finished pair waits for the boards started before it. So what is
  counted, the LLR path and the verdict are functions of the boards' results,
  not of which game a worker finished first (a game that ends fast, a quick
  loss, cannot jump the queue and bias a sequential test). A window of
  `WINDOW * in_flight` boards past the oldest uncounted one bounds the wait.
- A result for a game that is not open (recorded already, or not this
  test's) changes nothing: no pair counts twice.
- The sequential test is asked after every counted pair. The first crossing
  fixes the verdict; from then on, like at the game limit or after `stop`,
  no new pair starts. Pairs in flight finish, count and are shown (pentanomial,
  LLR, estimate) but do not change the verdict.
- A fixed-games test (`fixed_games` > 0) plays that many games and asks only
  for the estimate.
- A pair settles (in board order) once both its games are done. It is *void*
  when one of its games was forfeited (by C, by B or by an opponent: any
  reason, strikes or a disconnection) or lost to a failure of the stack (a row
  with `lost`, a game no worker could host): it is shown with who and why but
  enters no statistic (pentanomial, LLR, estimate). An opponent's forfeit voids
  the pair too: it ends one game early on placements the hero's play did not
  decide, so the two games of the board no longer compare C with B.
- At a threshold (`void_streak` void pairs in a row by one side, or more than
  `void_share` of the pairs settled once `void_after` have) the test stops
  with the verdict `forfeits` (never H0 or H1): its own words say who and why
  (`halt_text`). Sides: the candidate, the baseline, the opponents, the stack.
- `offline` (remote bots not connected now, from the caller) holds new pairs
  back: while one of them is away no pair starts and the state says whom the
  test waits for (`waiting`, and `waits` counts the changes, for events).
- `held` (from the caller, with the `in_flight` it sets) says why that cap is
  below what the test could take: its author's limit or share of the stack
  (`tournaments.share`). A cap of 0 starts nothing and the test goes on when a
  later step allows pairs again. The state keeps the words (`held`) while the
  test may start pairs, and a change of them counts in `waits` too. The share
  is a bound on *games* in play (`games`): a pair whose first game has
  finished holds one game slot, not two, so a new pair may start beside it.

The statistics are the judge's (`Judge`): the stack passes `ratings.sprt.Sprt`.
`tournaments/` cannot import it: `ratings/` comes after `tournaments/` in the layout
(`tests/test_layout.py`), so ratings may use the plans, not the other way round.
Game scores come from `store.results.game_quarters` (a pair's is
4 + q_C - q_B eighths, as `store.results.pair_eighths`).

Board seeds: `BoardSeeds` maps a board id (`<test id>/p<k>`, unique across the
stack) to its *planned* seed. The default derives it from the spec's seed and the
board id with `tournaments.plan.derive_seed`, the tournaments' derivation; the
scheduling step then deals every board of every event from its planned seed through
the stack's secret (`store.deals.deal`), so what a game is dealt is never the
planned seed itself and no released fact predicts a board. Nothing else in this
module knows how a seed is made.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from moon.deal import MAX_SEED
from store.errors import InvalidArgument
from store.ids import is_house_bot
from store.pools import Pool
from store.results import game_quarters
from tournaments.plan import Game, board_id, derive_seed

__all__ = [
    "FORFEITS",
    "LOST",
    "MAX_GAMES",
    "MAX_IN_FLIGHT",
    "SIDES",
    "WINDOW",
    "BoardSeeds",
    "ChangeSpec",
    "ChangeStep",
    "EloRange",
    "Judge",
    "Pair",
    "Progress",
    "board_games",
    "feed",
    "halt_text",
    "is_house",
    "notes",
    "plan",
    "progress",
    "roles",
    "seating",
    "spec_seeds",
    "start",
    "stop",
]

MAX_GAMES = 1_000_000
MAX_IN_FLIGHT = 10_000
WINDOW = 4  # boards started past the oldest uncounted board, per pair allowed in flight
PENDING = "pending"
FORFEITS = "forfeits"  # the verdict of a test stopped by its void pairs
SIDES = ("candidate", "baseline", "opponent", "stack")  # who voided a pair
LOST = "could not be hosted"  # the reason of a game lost to the stack

BoardSeeds = Callable[[str], int]


def is_house(bot_id: str) -> bool:
    """True for a house bot (`store.ids.is_house_bot`): the stack's own players."""
    return is_house_bot(bot_id)


class EloRange(Protocol):
    """An estimate of the test's Elo with its interval (`ratings.sprt.Estimate` is one)."""

    @property
    def elo(self) -> float:
        """The estimate."""

    @property
    def low(self) -> float:
        """The interval's lower end."""

    @property
    def high(self) -> float:
        """The interval's upper end."""


class Judge(Protocol):
    """The sequential test and the estimate the planner asks (`ratings.sprt.Sprt` is one)."""

    def judge(self, counts: Sequence[int]) -> tuple[float, str]:
        """The LLR of nine-bin pair counts and the verdict: "H0", "H1" or "pending"."""

    def estimate(self, counts: Sequence[int]) -> EloRange:
        """The test's Elo from nine-bin pair counts, with its interval."""


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _count(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f"{name} must be a whole number from {low} to {high}, "
                              f"got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ChangeSpec:
    """A test of a change as planned; checked on construction (InvalidArgument names the field).

    `opponents`: 3p the two opponents; 2v2 the partner of C/B, then the two bots of the
    other team. They must be house bots unless `trust_opponents` says the organiser trusts
    them to keep no memory between games (they see every board twice). `elo0`, `elo1`,
    `alpha`, `beta` are the sequential test's (`ratings.sprt`); `max_games` caps it;
    `fixed_games` > 0 plays exactly that many games instead, for an estimate.
    `void_streak` (0: never), `void_share` (1: never) and `void_after` are the
    thresholds of void pairs that stop the test with the verdict `forfeits`.
    """

    test_id: str
    players: int
    candidate: str
    baseline: str
    opponents: tuple[str, ...]
    seed: int
    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    max_games: int = 20_000
    fixed_games: int = 0
    in_flight: int = 16
    trust_opponents: bool = False
    void_streak: int = 3
    void_share: float = 0.05
    void_after: int = 20

    def __post_init__(self) -> None:
        if not isinstance(self.test_id, str) or not self.test_id:
            raise InvalidArgument("test_id must be a non-empty string")
        if isinstance(self.players, bool) or self.players not in (3, 4):
            raise InvalidArgument(f"players must be 3 or 4, got {self.players!r}")
        for name in ("candidate", "baseline"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InvalidArgument(f"{name} must be a bot id, got {value!r}")
        if self.candidate == self.baseline:
            raise InvalidArgument(f"candidate and baseline are the same bot ({self.candidate}): "
                                  "a test compares two")
        self._check_opponents()
        _count("seed", self.seed, 0, MAX_SEED)
        elo0, elo1 = _number("elo0", self.elo0), _number("elo1", self.elo1)
        if not elo0 < elo1:
            raise InvalidArgument(f"elo0 must be below elo1, got elo0={elo0:g}, elo1={elo1:g}")
        for name in ("alpha", "beta"):
            if not 0 < _number(name, getattr(self, name)) < 0.5:
                raise InvalidArgument(f"{name} must be in (0, 0.5), got {getattr(self, name)}")
        _count("max_games", self.max_games, 2, MAX_GAMES)
        if self.max_games % 2:
            raise InvalidArgument(f"max_games must be even (games come in pairs), "
                                  f"got {self.max_games}")
        _count("fixed_games", self.fixed_games, 0, MAX_GAMES)
        if self.fixed_games % 2:
            raise InvalidArgument(f"fixed_games must be even (games come in pairs), "
                                  f"got {self.fixed_games}")
        _count("in_flight", self.in_flight, 1, MAX_IN_FLIGHT)
        if not isinstance(self.trust_opponents, bool):
            raise InvalidArgument("trust_opponents must be true or false")
        _count("void_streak", self.void_streak, 0, MAX_GAMES)
        if not 0 < _number("void_share", self.void_share) <= 1:
            raise InvalidArgument(f"void_share must be in (0, 1] (1: never), "
                                  f"got {self.void_share}")
        _count("void_after", self.void_after, 1, MAX_GAMES)

    def _check_opponents(self) -> None:
        need = 2 if self.players == 3 else 3
        what = "two opponents" if self.players == 3 else "a partner and two opponents"
        opponents = self.opponents
        if not isinstance(opponents, tuple) or len(opponents) != need:
            raise InvalidArgument(f"opponents: a {self.pool} test needs {what}, "
                                  f"got {opponents!r}")
        for bot in opponents:
            if not isinstance(bot, str) or not bot:
                raise InvalidArgument(f"opponents: every opponent must be a bot id, got {bot!r}")
            if is_house(bot):
                continue
            if bot in (self.candidate, self.baseline):
                raise InvalidArgument(f"opponents: {bot} is the candidate or the baseline; "
                                      "C and B may see a board only once")
            if not self.trust_opponents:
                raise InvalidArgument(
                    f"opponents: {bot} is not a house bot; it would play every board twice, "
                    "so it is allowed only with trust_opponents (the organiser trusts it to "
                    "keep no memory between games)")
        remote = [b for b in opponents if not is_house(b)]
        if self.players == 3 and len(set(remote)) != len(remote):
            raise InvalidArgument("opponents: a bot may not play against itself")
        if self.players == 4 and opponents[0] in opponents[1:] and not is_house(opponents[0]):
            raise InvalidArgument(f"opponents: {opponents[0]} cannot partner C/B and play on "
                                  "the other team")

    @property
    def pool(self) -> str:
        """`3p` or `2v2`."""
        return Pool.of(self.players)

    @property
    def sequential(self) -> bool:
        """True for a sequential test, False for a fixed number of games."""
        return self.fixed_games == 0

    @property
    def boards(self) -> int:
        """The most boards (pairs) the test may start."""
        return (self.max_games if self.sequential else self.fixed_games) // 2

    def to_json(self) -> str:
        """The spec as a JSON string."""
        return json.dumps({
            "test_id": self.test_id, "players": self.players, "candidate": self.candidate,
            "baseline": self.baseline, "opponents": list(self.opponents), "seed": self.seed,
            "elo0": self.elo0, "elo1": self.elo1, "alpha": self.alpha, "beta": self.beta,
            "max_games": self.max_games, "fixed_games": self.fixed_games,
            "in_flight": self.in_flight, "trust_opponents": self.trust_opponents,
            "void_streak": self.void_streak, "void_share": self.void_share,
            "void_after": self.void_after,
        }, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> ChangeSpec:
        """Inverse of `to_json` (a spec stored before the void thresholds gets their
        defaults)."""
        d = json.loads(text)
        return ChangeSpec(**{**d, "opponents": tuple(d["opponents"])})


def notes(spec: ChangeSpec) -> list[str]:
    """What players and watchers should know about how a test deals, for people."""
    out = ["a test of a change: each board is played twice, once by the candidate and once "
           "by the baseline, in the same seat against the same opponents in the same seats; "
           "a pair counts once both its games are recorded"]
    remote = sorted({b for b in spec.opponents if not is_house(b)})
    if remote:
        out.append(f"the opponents {', '.join(remote)} are not house bots: they play every "
                   "board twice, and the organiser trusts them to keep no memory between games")
    out.append("a pair in which the candidate, the baseline or an opponent forfeits, or a game "
               "the stack could not host, is void: shown with its reason, counted in no "
               f"statistic; the test stops {_thresholds(spec)}")
    return out


def _thresholds(spec: ChangeSpec) -> str:
    """When void pairs stop a test, in words."""
    parts = []
    if spec.void_streak:
        parts.append(f"after {spec.void_streak} void pairs in a row by one side")
    if spec.void_share < 1:
        parts.append(f"once one side voided more than {100 * spec.void_share:g}% of the pairs, "
                     f"from {spec.void_after} pairs on")
    return " or ".join(parts) or "for no number of void pairs (no threshold set)"


# ------------------------------------------------------------------ boards


def spec_seeds(spec: ChangeSpec) -> BoardSeeds:
    """The default board seeds: the spec's seed and the board id (module doc: the seam)."""
    return lambda board: derive_seed(spec.seed, board)


def _layout(spec: ChangeSpec, board: int) -> tuple[int, list[int]]:
    """The seat C/B holds on board `board` (from 0), and the index in `spec.opponents` of
    the bot at every seat (-1 at C/B's)."""
    at = [-1] * spec.players
    if spec.players == 3:
        hero = board % 3
        first, second = (1, 0) if (board // 3) % 2 else (0, 1)
        at[(hero + 1) % 3], at[(hero + 2) % 3] = first, second
        return hero, at
    hero = board % 4
    at[(hero + 2) % 4] = 0
    first, second = (2, 1) if (board // 4) % 2 else (1, 2)
    at[(hero + 1) % 4], at[(hero + 3) % 4] = first, second
    return hero, at


def seating(spec: ChangeSpec, board: int) -> tuple[int, tuple[str, ...]]:
    """The seat C/B holds on board `board` (from 0), and every seat's bot with "" there."""
    hero, at = _layout(spec, board)
    return hero, tuple("" if i < 0 else spec.opponents[i] for i in at)


def roles(spec: ChangeSpec, board: int) -> tuple[str, ...]:
    """Who holds each seat of board `board` (from 0), for people: "hero" (C in C's game,
    B in B's), and the opponents by their place in `spec.opponents`: 3p "opponent 1",
    "opponent 2"; 2v2 "partner", "opponent 1", "opponent 2". Both games of a board seat
    each opponent alike, so the names hold for both."""
    _, at = _layout(spec, board)
    names = ("opponent 1", "opponent 2") if spec.players == 3 else (
        "partner", "opponent 1", "opponent 2")
    return tuple("hero" if i < 0 else names[i] for i in at)


def _unit(board: int) -> str:
    return f"p{board + 1}"


def _game_id(spec: ChangeSpec, board: int, role: str) -> str:
    return f"{spec.test_id}-{_unit(board)}-{role}"


def board_games(spec: ChangeSpec, board: int, seeds: BoardSeeds | None = None
                ) -> tuple[Game, Game]:
    """Board `board`'s two games: C's (id `<test>-p<k>-c`) and B's (`-b`), one deal."""
    hero, seats = seating(spec, board)
    unit = _unit(board)
    seed = (seeds or spec_seeds(spec))(board_id(spec.test_id, unit))
    out = []
    for role, bot in (("c", spec.candidate), ("b", spec.baseline)):
        bots = tuple(bot if s == hero else b for s, b in enumerate(seats))
        out.append(Game(_game_id(spec, board, role), unit, bots, seed))
    return out[0], out[1]


# ------------------------------------------------------------------ steps


Void = tuple[str, str, str]  # (side, reason, match id) of a game that voids its pair


@dataclass(frozen=True, slots=True)
class Pair:
    """A settled pair: its board, its two games, its score in eighths (None when void), the
    LLR after it, and why it is void (empty for a counted pair)."""

    board: int  # from 0
    board_id: str
    candidate_game: str
    baseline_game: str
    eighths: int | None
    llr: float  # 0.0 in a fixed-games test
    voids: tuple[Void, ...] = ()

    @property
    def counted(self) -> bool:
        """True for a pair that counts (not void)."""
        return not self.voids


@dataclass(frozen=True, slots=True)
class Progress:
    """What a test shows: games, pairs, the nine bins, the LLR, the verdict, the estimate,
    the void pairs and whom the test waits for."""

    games: int  # games recorded
    pairs: int  # pairs counted
    in_flight: int  # pairs started and not both recorded
    counts: tuple[int, ...]  # pair scores 0/8 .. 8/8
    llr: float
    verdict: str  # "pending", "H0", "H1" or "forfeits": fixed at the first crossing
    verdict_pairs: int  # pairs counted when it was reached (0 while pending)
    elo: float
    elo_low: float
    elo_high: float
    finished: bool
    outcome: str  # "" while running; then "H0", "H1", "forfeits", "limit", "stopped", "done"
    void: int = 0  # pairs void
    voids: tuple[tuple[str, str, int], ...] = ()  # (side, reason, pairs), by side then reason
    waiting: tuple[str, ...] = ()  # bots (ids) new pairs wait for
    held: str = ""  # why fewer pairs start than the test could take (its author's limits)
    verdict_llr: float = 0.0  # the LLR at the crossing (H0, H1)
    halt: str = ""  # with the verdict "forfeits": who and why, for people (`halt_text`)
    halt_side: str = ""  # ... and the side

    @property
    def settled(self) -> int:
        """Pairs settled: counted or void."""
        return self.pairs + self.void


@dataclass
class ChangeStep:
    """One step: the new state, games to create now, pairs newly settled (counted or void,
    in board order), boards newly complete (both games done: releasable), and the
    progress."""

    state: dict[str, Any]
    games: list[Game]
    counted: list[Pair]
    released: list[str]
    progress: Progress
    unknown: list[str] = field(default_factory=list)  # results not open here, ignored


def _fresh_state() -> dict[str, Any]:
    return {"next": 0, "counted": 0, "open": {}, "counts": [0] * 9, "games": 0, "llr": 0.0,
            "verdict": PENDING, "verdict_pairs": 0, "stopped": False, "settled": 0,
            "void": 0, "voids": {}, "sides": {}, "streak": {}, "halt": None, "verdict_llr": 0.0,
            "waiting": [], "waits": 0, "held": ""}


def _copy(state: Mapping[str, Any]) -> dict[str, Any]:
    """A deep enough copy, a state stored before void pairs given their keys."""
    st = {**_fresh_state(), "settled": state["counted"], **state}
    st["open"] = {k: [list(x) if isinstance(x, list) else x for x in v]
                  for k, v in state["open"].items()}
    st["counts"] = list(state["counts"])
    st["voids"] = {side: dict(why) for side, why in st["voids"].items()}
    st["streak"] = dict(st["streak"])
    st["sides"] = dict(st["sides"])
    st["waiting"] = list(st["waiting"])
    return st


def _done(game: Any) -> bool:
    """A game of a slot is done: its score (quarters, >= 0) or why it is void (a list)."""
    return isinstance(game, list) or game >= 0


def _can_start(spec: ChangeSpec, st: Mapping[str, Any]) -> bool:
    return not st["stopped"] and st["next"] < spec.boards and st["verdict"] == PENDING


def _in_flight(st: Mapping[str, Any]) -> int:
    return sum(1 for v in st["open"].values() if not all(_done(x) for x in v))


def _playing(st: Mapping[str, Any]) -> int:
    """Games of the open boards not done yet (in play, or queued)."""
    return sum(1 for v in st["open"].values() for x in v if not _done(x))


def _fill(spec: ChangeSpec, st: dict[str, Any], seeds: BoardSeeds, cap: int,
          most: int | None = None) -> list[Game]:
    games: list[Game] = []
    flying = _in_flight(st)
    playing = _playing(st)
    while _can_start(spec, st) and flying < cap and st["next"] - st["settled"] < WINDOW * cap \
            and (most is None or playing + 2 <= most):
        games.extend(board_games(spec, st["next"], seeds))
        st["open"][str(st["next"])] = [-1, -1]
        st["next"] += 1
        flying += 1
        playing += 2
    return games


def _open_created(spec: ChangeSpec, st: dict[str, Any], seeds: BoardSeeds, created: int
                  ) -> list[Game]:
    """Open every board below `created` that the state does not know yet: a step that
    created their games died before saving its state. They are in flight whatever the
    state says now (a verdict, a stop, a lower capacity, a bot away), so they open
    regardless; and before any result is folded, as their own results may be in the same
    batch."""
    created = min(_count("created", created, 0, 2 ** 31), spec.boards)
    games: list[Game] = []
    while st["next"] < created:
        games.extend(board_games(spec, st["next"], seeds))
        st["open"][str(st["next"])] = [-1, -1]
        st["next"] += 1
    return games


_WHO = {"candidate": "the candidate", "baseline": "the baseline",
        "opponent": "the opponents", "stack": "the stack"}


def halt_text(halt: Mapping[str, Any]) -> str:
    """Why void pairs stopped a test, for people: "the baseline forfeited 5 of 40 pairs:
    disconnected for more than 2 s", "the stack lost 3 pairs in a row: a game could not
    be hosted"."""
    side, reason = str(halt["side"]), str(halt["reason"])
    verb = "lost" if side == "stack" else "forfeited"
    why = f"a game {reason}" if side == "stack" else reason
    streak = int(halt.get("streak", 0))
    if streak:
        return f"{_WHO[side]} {verb} {streak} pairs in a row: {why}"
    return f"{_WHO[side]} {verb} {int(halt['void'])} of {int(halt['settled'])} pairs: {why}"


def _voids_of(st: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    return tuple((side, reason, int(n)) for side in SIDES
                 for reason, n in sorted(st["voids"].get(side, {}).items()))


def _progress(spec: ChangeSpec, st: Mapping[str, Any], judge: Judge) -> Progress:
    st = _copy(st)
    counts = tuple(int(c) for c in st["counts"])
    est = judge.estimate(counts)
    finished = not _can_start(spec, st) and not st["open"]
    outcome = ""
    if finished:
        if st["verdict"] != PENDING:
            outcome = str(st["verdict"])
        elif st["stopped"]:
            outcome = "stopped"
        else:
            outcome = "limit" if spec.sequential else "done"
    halt = st["halt"]
    return Progress(int(st["games"]), int(st["counted"]), _in_flight(st), counts,
                    float(st["llr"]), str(st["verdict"]), int(st["verdict_pairs"]),
                    float(est.elo), float(est.low), float(est.high), finished, outcome,
                    void=int(st["void"]), voids=_voids_of(st),
                    waiting=tuple(str(b) for b in st["waiting"]), held=str(st["held"]),
                    verdict_llr=float(st["verdict_llr"]),
                    halt=halt_text(halt) if halt else "",
                    halt_side=str(halt["side"]) if halt else "")


def _step(spec: ChangeSpec, st: dict[str, Any], judge: Judge, seeds: BoardSeeds | None,
          in_flight: int | None, counted: list[Pair], released: list[str],
          unknown: list[str], reopened: list[Game] | None = None,
          offline: Sequence[str] = (), held: str = "", most: int | None = None
          ) -> ChangeStep:
    cap = spec.in_flight if in_flight is None else _count("in_flight", in_flight, 0,
                                                           MAX_IN_FLIGHT)
    starting = _can_start(spec, st)
    waiting = sorted(set(offline)) if starting else []
    held = held if starting and not waiting else ""
    if waiting != st["waiting"] or held != st["held"]:
        st["waiting"], st["held"], st["waits"] = waiting, held, int(st["waits"]) + 1
    if waiting:
        cap = 0  # no pair starts while a bot it needs is away
    if most is not None:
        most = _count("games", most, 0, 2 * MAX_IN_FLIGHT)
    games = [*(reopened or []), *_fill(spec, st, seeds or spec_seeds(spec), cap, most)]
    return ChangeStep(st, games, counted, released, _progress(spec, st, judge), unknown)


def start(spec: ChangeSpec, judge: Judge, seeds: BoardSeeds | None = None,
          in_flight: int | None = None, created: int = 0,
          offline: Sequence[str] = (), held: str = "", games: int | None = None
          ) -> ChangeStep:
    """Nothing played: the first pairs' games. `in_flight` overrides the spec's cap for
    this step (the bots' capacity now, and the author's limit), and `games` bounds the
    games in play (the author's share of the stack; None: no bound): `held` says why they
    are lower than the test could take, if they are; `created` boards exist already (a
    first step redone) and open whatever the cap; while any bot of `offline` (remote bots
    not connected now) is away, no pair starts and the state names them."""
    st = _fresh_state()
    reopened = _open_created(spec, st, seeds or spec_seeds(spec), created)
    return _step(spec, st, judge, seeds, in_flight, [], [], [], reopened, offline, held,
                 games)


def _parse(spec: ChangeSpec, match_id: str) -> tuple[int, int] | None:
    """(board, 0 for C's game / 1 for B's) of one of this test's game ids, else None."""
    prefix = f"{spec.test_id}-p"
    if not match_id.startswith(prefix):
        return None
    number, _, role = match_id[len(prefix):].partition("-")
    if not number.isdigit() or number.startswith("0") or role not in ("c", "b"):
        return None
    return int(number) - 1, 0 if role == "c" else 1


def _game_of(spec: ChangeSpec, board: int, index: int, row: Mapping[str, Any]) -> Any:
    """What a result row makes of a game, after checking the row is the game that was
    planned: the hero's game score (quarters), or [side, reason, match id] when the game
    voids its pair (a forfeit by anyone, a game lost to the stack)."""
    hero, _ = seating(spec, board)
    planned = board_games(spec, board, lambda _: 0)[index].bot_ids
    mid = str(row.get("match_id"))
    try:
        bots = tuple(str(b) for b in row["bot_ids"])
    except (KeyError, TypeError):
        raise InvalidArgument(f"result of {mid}: needs bot_ids and placement") from None
    if bots != planned:
        raise InvalidArgument(f"result of {mid}: seats {list(bots)}, planned {list(planned)}")
    if row.get("lost") is not None:
        return ["stack", LOST, mid]
    forfeit = row.get("forfeit")
    if isinstance(forfeit, Mapping) and forfeit.get("seat") is not None:
        try:
            seat = int(forfeit["seat"])
        except (TypeError, ValueError):
            raise InvalidArgument(f"result of {mid}: a forfeit needs its seat") from None
        reason = " ".join(str(forfeit.get("reason") or "forfeit").split())[:200]
        side = ("candidate", "baseline")[index] if seat == hero else "opponent"
        return [side, reason, mid]
    try:
        placement = [int(p) for p in row["placement"]]
    except (KeyError, TypeError, ValueError):
        raise InvalidArgument(f"result of {mid}: needs bot_ids and placement") from None
    return game_quarters(spec.players, placement, hero)


def _settle_void(spec: ChangeSpec, st: dict[str, Any], voids: tuple[Void, ...]) -> None:
    """Count a void pair by side and reason, keep each side's streak, and stop the test
    (verdict `forfeits`) at the first threshold crossed while no verdict is in."""
    st["void"] += 1
    sides = {v[0] for v in voids}
    for side in sides:
        st["sides"][side] = int(st["sides"].get(side, 0)) + 1
    for side, reason in dict.fromkeys((v[0], v[1]) for v in voids):
        why = st["voids"].setdefault(side, {})
        why[reason] = int(why.get(reason, 0)) + 1
    for side in SIDES:
        st["streak"][side] = int(st["streak"].get(side, 0)) + 1 if side in sides else 0
    _check_thresholds(spec, st)


def _check_thresholds(spec: ChangeSpec, st: dict[str, Any]) -> None:
    if st["verdict"] != PENDING:
        return
    settled = int(st["settled"])
    for side in SIDES:
        why = st["voids"].get(side, {})
        void = int(st["sides"].get(side, 0))
        streak = int(st["streak"].get(side, 0))
        by_streak = bool(spec.void_streak) and streak >= spec.void_streak
        by_share = settled >= spec.void_after and void > spec.void_share * settled
        if by_streak or by_share:
            reason = max(sorted(why), key=lambda k: int(why[k]))
            st["verdict"], st["verdict_pairs"] = FORFEITS, st["counted"]
            st["halt"] = {"side": side, "reason": reason, "void": void, "settled": settled,
                          "streak": streak if by_streak else 0}
            return


def feed(spec: ChangeSpec, state: Mapping[str, Any], results: Sequence[Mapping[str, Any]],
         judge: Judge, seeds: BoardSeeds | None = None, in_flight: int | None = None,
         created: int = 0, offline: Sequence[str] = (), held: str = "",
         games: int | None = None) -> ChangeStep:
    """Fold newly finished result rows (`store.results.result_row`, or a lost game's row)
    into the state: record each open game once, settle finished pairs in board order
    (counted, the judge asked after each; or void, the thresholds checked after each),
    then start new pairs while allowed (none while a bot of `offline` is away; `games`
    and `held` as in `start`). Boards
    below `created` whose games exist already (a step that made them died before saving)
    open first, so that their results, which may be in this very batch, count."""
    st = _copy(state)
    reopened = _open_created(spec, st, seeds or spec_seeds(spec), created)
    counted: list[Pair] = []
    released: list[str] = []
    unknown: list[str] = []
    for row in results:
        mid = str(row.get("match_id", ""))
        where = _parse(spec, mid)
        slot = st["open"].get(str(where[0])) if where else None
        if where is None or slot is None or _done(slot[where[1]]):
            unknown.append(mid)  # not this test's, or recorded already: counts nothing
            continue
        board, index = where
        slot[index] = _game_of(spec, board, index, row)
        st["games"] += 1
        if all(_done(x) for x in slot):
            released.append(board_id(spec.test_id, _unit(board)))
    while (slot := st["open"].get(str(st["settled"]))) is not None \
            and all(_done(x) for x in slot):
        board = st["settled"]
        del st["open"][str(board)]
        st["settled"] += 1
        voids = tuple((str(x[0]), str(x[1]), str(x[2])) for x in slot if isinstance(x, list))
        eighths: int | None = None
        if voids:
            _settle_void(spec, st, voids)
        else:
            eighths = 4 + slot[0] - slot[1]
            st["counts"][eighths] += 1
            st["counted"] += 1
            st["streak"] = {}
            if spec.sequential:
                value, verdict = judge.judge(tuple(st["counts"]))
                st["llr"] = float(value)
                if st["verdict"] == PENDING and verdict in ("H0", "H1"):
                    st["verdict"], st["verdict_pairs"] = verdict, st["counted"]
                    st["verdict_llr"] = float(value)
            _check_thresholds(spec, st)  # a counted pair lowers every side's share
        counted.append(Pair(board, board_id(spec.test_id, _unit(board)),
                            _game_id(spec, board, "c"), _game_id(spec, board, "b"), eighths,
                            float(st["llr"]), voids))
    return _step(spec, st, judge, seeds, in_flight, counted, released, unknown, reopened,
                 offline, held, games)


def progress(spec: ChangeSpec, state: Mapping[str, Any] | None, judge: Judge) -> Progress:
    """What a stored state shows (None: before the first step), without stepping it."""
    return _progress(spec, _fresh_state() if state is None else state, judge)


def stop(spec: ChangeSpec, state: Mapping[str, Any], judge: Judge) -> ChangeStep:
    """Stop early: no new pair starts; pairs in flight still finish and count."""
    st = _copy(state)
    st["stopped"] = True
    return _step(spec, st, judge, None, None, [], [], [])


def plan(spec: ChangeSpec, results: Mapping[str, Mapping[str, Any]], judge: Judge,
         seeds: BoardSeeds | None = None) -> tuple[list[Game], ChangeStep]:
    """Every game created and the last step, folding the results (by match id) of created
    games through `start` and `feed` in creation order: what the tests check it with."""
    step = start(spec, judge, seeds)
    games = list(step.games)
    seen = 0
    while True:
        batch = [results[g.match_id] for g in games[seen:] if g.match_id in results]
        seen = len(games)
        if not batch:
            return games, step
        step = feed(spec, step.state, batch, judge, seeds)
        games += step.games
