"""The arena of a pool as the scheduling step drives it: `ArenaPlanner`.

The arena is one of the step's planners (`workers.scheduler.PLANNERS`), beside
tournaments and tests of a change: the step gives it the lock, coalesced asks, the
cursor over recorded games, the compare-and-set of its state, deals through the
stack's secret, creation of the games it decides (saved first, created after),
release by board and recovery's nudges. What is the arena's own:

- its state (`plan` in the step's state): per bot, what matchmaking needs (games
  under way and finished, since when it is free, recent table-mates, seats held),
  the next board number and running totals, so a pass reads one JSON value, the
  joined set, the bots' presence and the fit, whatever the arena's age;
- folding recorded games in: each bot's games under way and finished (a failed game
  frees its bots and counts for nothing);
- while the arena runs, matchmaking: the joined bots that are connected (house anchors
  always are) with a free slot, their fitted ratings, records and groups (their
  authors', the stack's: `tournaments.apart`), handed to the pure step
  `tournaments.arena.step` with a seed derived from the arena's seed and the next board
  number; each board it forms is a unit (`b<n>`, board `arena-<pool>/b<n>`) whose
  tables share one deal, split where two of its tables would seat two bots of one
  group (each split board counted, `apart`, and, when an author's bots were the
  reason, noted in its games: which board it was dealt apart from; a declared group's
  splits are only counted, since notes pass after pass would show a watcher who is in
  it); a table the step could not keep a group off is counted (`together`) and, for an
  author's bots, noted in its game;
- when to look again: at the step's `retry_at` while it holds for a batch, else every
  NUDGE_S while it runs (a bot may have come back on a referee that could not ask);
- a stopped arena is dormant: it deals nothing, and once its last boards are released
  recovery stops nudging it;
- released games join the pool's ratings (a fit is asked for); what its last pass saw
  goes to the arena's hash for GetArena and the metrics.

Board numbers only grow (the counter moves with the state, by compare-and-set), and the
stack's record of deals refuses any deal another board had (so any a bot had), which
is the cheaper equivalent of handing the step every board each bot was dealt
(`Candidate.dealt` stays empty).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from scipy import stats

from store import arena as store_arena
from store import clock
from store import groups as store_groups
from store import ratings as store_ratings
from store.arena import ArenaInfo, ArenaStatus, arena_name
from store.errors import FailedPrecondition
from store.records import MatchSpec
from store.refs import EventRef
from tournaments import apart, arena
from tournaments.plan import Game, derive_seed
from workers import metrics
from workers.planner import Planned
from workers.queues import request_fit

__all__ = ["NUDGE_S", "ArenaPlanner", "arena_name", "board_of", "game_id"]

log = logging.getLogger("moonshot.arena")

NUDGE_S = 5.0  # a running arena looks at its bots at least this often
_AVOID = arena.Settings().avoid  # games of table-mates each bot remembers


def board_of(pool: str, number: int) -> str:
    """Board `number` of a pool's arena: `arena-3p/b17`."""
    return f"{arena_name(pool)}/b{number}"


def game_id(pool: str, number: int, table: int) -> str:
    """The game of table `table` of board `number`: `m-a3pb17t0` (a match id)."""
    return f"m-a{pool}b{number}t{table}"


def _fresh() -> dict[str, Any]:
    """The arena's own state before its first pass."""
    return {"next_board": 1, "games": 0, "tables": 0, "bots": {}}


@dataclass
class ArenaPlanner:
    """A pool's arena, planned by matchmaking (`tournaments.arena.step`)."""

    info: ArenaInfo
    rated: bool = True
    streams: bool = False  # its page reads its state (`store.refs.EventKind.streams`)
    names: dict[str, str] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    tables: int = 0  # tables formed by this pass
    # The notes of this pass's games that have any: a board dealt apart, a table that seats
    # two bots of one group (only where the free bots could not be split otherwise).
    notes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ref(self) -> EventRef:
        """The arena."""
        return EventRef.arena(self.info.spec.pool)

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.info.spec.players

    @staticmethod
    def load(r: redis.Redis, ref: EventRef) -> ArenaPlanner:
        """The planner of a pool's arena (NotFound when it never started)."""
        store_arena.upgrade(r, ref.id)
        return ArenaPlanner(store_arena.info(r, ref.id))

    def first(self, r: redis.Redis) -> Planned:
        """The first pass: nothing recorded yet."""
        return self.feed(r, _fresh(), [], {})

    def feed(self, r: redis.Redis, state: dict[str, Any], rows: Sequence[dict[str, Any]],
             failed: Mapping[str, str]) -> Planned:
        """Fold the recorded games in; while the arena runs, seat its free bots."""
        st = copy.deepcopy(state)
        spec = self.info.spec
        now = clock.now(r)  # Redis's clock: the one every worker shares
        _fold(st, [str(row["match_id"]) for row in rows], set(failed), spec.concurrency, now)
        running = self.info.status == ArenaStatus.RUNNING
        games: list[Game] = []
        wake_at = None
        self.figures = {"holding": "the arena is stopped"}
        if running:
            games, retry_at = self._match(r, st, now)
            wake_at = retry_at if retry_at is not None else now + NUDGE_S
        self.figures.update(_counts(st), step_at=now)
        return Planned(st, games, int(st["games"]), finished=False, wake_at=wake_at,
                       dormant=not running)

    def board_of(self, unit: str) -> str:
        """`arena-<pool>/<unit>`."""
        return f"{arena_name(self.info.spec.pool)}/{unit}"

    def match_spec(self, game: Game, seed: int) -> MatchSpec:
        """One table of a board."""
        spec = self.info.spec
        meta: dict[str, Any] = {"board": self.board_of(game.unit), "unit": game.unit,
                                "duplicate": "boards"}
        if game.match_id in self.notes:
            meta["notes"] = self.notes[game.match_id]
        return MatchSpec(
            match_id=game.match_id, rules=spec.rules, seed=seed, bot_ids=game.bot_ids,
            seat_names=tuple(self.names.get(b, b) for b in game.bot_ids), clock=spec.clock,
            faults=spec.faults, event=self.ref, sandbox=spec.sandbox, meta=meta)

    def recorded(self, r: redis.Redis, fresh: Sequence[tuple[str, dict[str, Any]]],
                 cursor: int, planned: Planned) -> None:
        """Nothing: an arena game's result goes out with its board."""

    def released(self, r: redis.Redis, rq_conn: redis.Redis, count: int,
                 planned: Planned) -> None:
        """Released games joined the pool: a fit is owed."""
        request_fit(r, rq_conn, self.info.spec.pool)

    def bookkeep(self, r: redis.Redis, planned: Planned) -> None:
        """What this pass saw, for GetArena and the metrics."""
        store_arena.note_step(r, self.info.spec.pool, self.figures)
        if self.tables:
            metrics.ARENA_TABLES.labels(self.info.spec.pool).inc(self.tables)

    # ------------------------------------------------------------ matchmaking

    def _match(self, r: redis.Redis, st: dict[str, Any], now: float
               ) -> tuple[list[Game], float | None]:
        """Call the pure step on the free bots; note the boards it forms in the state."""
        spec = self.info.spec
        pool = spec.pool
        online = store_arena.online(r, pool, spec.anchors)
        for bot_id in online:
            st["bots"].setdefault(bot_id, {"live": [], "games": 0, "free": None,
                                           "recent": [], "seats": []})
        free = [b for b in online if len(st["bots"][b]["live"]) < spec.concurrency]
        settings = arena.Settings(concurrency=spec.concurrency,
                                  max_wait_s=spec.max_wait_ms / 1000)
        rated = _ratings(r, pool)
        # The free bots' groups (their authors', the stack's): the step keeps two bots of
        # one off one table, and `_seat` keeps them off one board.
        stack = store_groups.all_groups(r)
        groups = apart.resolve(store_arena.owners(r, set(free)),
                               {apart.stack_name(n): v for n, v in stack.items()})
        member = apart.membership(groups)
        request = arena.Request(
            pool=pool, arena=arena_name(pool), next_board=int(st["next_board"]), now=now,
            online=len(online), seed=derive_seed(spec.seed, f"step/{st['next_board']}"),
            settings=settings,
            bots=tuple(_candidate(b, st["bots"][b], rated.get(b), now, frozenset(
                groups[i].name for i in member.get(b, ()))) for b in free))
        try:
            step = arena.step(request)
            boards, waiting, holding = list(step.boards), step.waiting, step.reason
            retry_at = step.retry_at
        except FailedPrecondition as exc:  # too few online for two tables: nothing to do
            boards, waiting, holding, retry_at = [], tuple(free), str(exc), None
        seated = {b for board in boards for t in board.tables for b in t.seats}
        for bot_id, b in st["bots"].items():  # only an online bot with a free slot is free
            if bot_id not in free:
                b["free"] = None
            elif b.get("free") is None:
                b["free"] = now
        self.names = store_arena.names(r, seated)
        games = self._seat(st, boards, now, groups)
        self.figures = {"online": len(online), "free": len(free), "waiting": len(waiting),
                        "seated": len(seated), "holding": holding}
        return games, retry_at

    def _seat(self, st: dict[str, Any], boards: Sequence[arena.Board], now: float,
              groups: Sequence[apart.Group] = ()) -> list[Game]:
        """The games of the boards formed, each noted under way for its bots. A board
        that would seat two bots of one author or group at two of its tables is split
        (`tournaments.apart.classes`): the tables that cannot share its deal get boards of
        their own, numbered on from the step's, and their games say which board they were
        dealt apart from and why."""
        spec = self.info.spec
        pool, k = spec.pool, spec.players
        games = []
        number = int(st["next_board"])
        for board in boards:
            tables = [t.seats for t in board.tables]
            split = apart.classes(tables, groups)
            # A table dealt apart conflicts with the first board's (the greedy colouring
            # tried it there first): the groups that would have met there are the why.
            clashes = apart.conflicts(tables, groups) if len(split) > 1 else []
            first = ""
            for cls in split:
                number = max(number, int(st["next_board"]))
                board_name = board_of(pool, number)
                planned = derive_seed(spec.seed, board_name)
                why = []
                if first:
                    # Noted for an author's bots only (authorship is public). A note
                    # for a declared group, pass after pass, would tell a watcher who is
                    # in it (a bot of this board and one of the first, every time):
                    # counted, not noted.
                    met = {g for i, j, g in clashes
                           if (i in cls and j in split[0]) or (j in cls and i in split[0])}
                    if authors := {g for g in met if apart.is_author_group(g)}:
                        why = [apart.apart_note(board_name, first, authors)]
                    st["apart"] = int(st.get("apart", 0)) + 1
                first = first or board_name
                for i, t in enumerate(cls):
                    seats = tables[t]
                    mid = game_id(pool, number, i)
                    games.append(Game(mid, f"b{number}", seats, planned))
                    st["games"] += 1
                    notes = list(why)
                    if board.tables[t].kin:
                        # Likewise: said of an author's bots, only counted of a declared
                        # group (the note would name two of the table's three bots).
                        kin = [g for g in board.tables[t].kin if apart.is_author_group(g)]
                        notes += _together_note(kin) if kin else []
                        st["together"] = int(st.get("together", 0)) + 1
                    if notes:
                        self.notes[mid] = notes
                    for seat, bot_id in enumerate(seats):
                        _seated(st["bots"][bot_id], mid, seat, seats, k, spec.concurrency,
                                now)
                st["tables"] += len(cls)
                self.tables += len(cls)
                st["next_board"] = number + 1
        return games


def _together_note(groups: Sequence[str]) -> list[str]:
    """A game that seats two bots of one group at one table says so."""
    return [f"this table seats two bots of one group ({apart.kinds(groups)}): the free bots "
            "could not be split otherwise, so the arena dealt it rather than leave them "
            "waiting"]


def _counts(st: dict[str, Any]) -> dict[str, Any]:
    """The state's running totals, as GetArena and the metrics show them (`together`:
    tables that seat two bots of one group; `apart`: boards dealt apart from another)."""
    playing = len({mid for b in st["bots"].values() for mid in b["live"]})
    return {"boards": int(st["next_board"]) - 1, "games": int(st["games"]),
            "tables": int(st["tables"]), "playing": playing,
            "together": int(st.get("together", 0)), "apart": int(st.get("apart", 0))}


def _fold(st: dict[str, Any], finished: Sequence[str], failed: set[str], concurrency: int,
          now: float) -> None:
    """Each bot's games under way and finished, after these games ended (a failed game
    counts for nothing but frees its bots)."""
    ended = set(finished) | failed
    if not ended:
        return
    for b in st["bots"].values():
        gone = [mid for mid in b["live"] if mid in ended]
        if not gone:
            continue
        full = len(b["live"]) >= concurrency
        b["live"] = [mid for mid in b["live"] if mid not in ended]
        b["games"] += sum(1 for mid in gone if mid not in failed)
        if full or b.get("free") is None:
            b["free"] = now


def _ratings(r: redis.Redis, pool: str) -> dict[str, tuple[float, float, int]]:
    """Each rated bot's (rating, standard error, games) in the pool, from the stored fit
    (the provisional figure when there is no fit yet: no errors then)."""
    table = store_ratings.current(r, pool)
    if table is None:
        return {}
    z = float(stats.t.ppf(0.5 + table.level / 2, table.dof)) if table.dof else float(
        stats.norm.ppf(0.5 + table.level / 2))
    out = {}
    for row in table.rows:
        sd = arena.PRIOR_SD
        if row.ci_low is not None and row.ci_high is not None and row.ci_high > row.ci_low:
            sd = (row.ci_high - row.ci_low) / (2 * z)
        out[row.bot_id] = (row.rating, sd, row.games)
    return out


def _candidate(bot_id: str, b: dict[str, Any], rated: tuple[float, float, int] | None,
               now: float, groups: frozenset[str] = frozenset()) -> arena.Candidate:
    """A free bot as the step sees it."""
    rating, sd, games = rated if rated is not None else (0.0, arena.PRIOR_SD, 0)
    return arena.Candidate(
        bot_id=bot_id, rating=rating, sd=sd, games=max(games, int(b["games"])),
        in_progress=len(b["live"]), free_since=float(b["free"] if b.get("free") else now),
        recent=tuple(b["recent"]), seats=tuple(b["seats"]), groups=groups)


def _seated(b: dict[str, Any], mid: str, seat: int, seats: Sequence[str], k: int,
            concurrency: int, now: float) -> None:
    """Note a new game of a bot: under way, its table-mates (2v2: partner first), its seat."""
    if k == 4:
        partner = seats[(seat + 2) % 4]
        mates = [partner, *(x for s, x in enumerate(seats) if s not in (seat, (seat + 2) % 4))]
    else:
        mates = [x for s, x in enumerate(seats) if s != seat]
    b["live"].append(mid)
    b["recent"] = (mates + list(b["recent"]))[: _AVOID * (k - 1)]
    counts = list(b["seats"]) or [0] * k
    counts[seat] += 1
    b["seats"] = counts
    b["free"] = now if len(b["live"]) < concurrency else None
