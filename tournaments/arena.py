"""The arena's matchmaking step: the free bots of a pool in, tables on new boards out.

`step(Request) -> Step` is pure and deterministic (a function of the request,
its seed included, whatever the order of its bots), so the matchmaking job
that calls it can run it again after a crash and get the same boards for the
same state. What it does, in order:

1. **Checks** the request: InvalidArgument naming the field (a concurrency
   of 0, a bot listed twice, a bot that is not free, ...); FailedPrecondition
   when fewer bots are online than two tables need (`least_online`).
2. **Holds or deals.** Tables formed together share one new board, and a
   board needs two tables at least, as a round robin's round does. A step
   deals once `Settings.batch` of the online bots are free, or once a free
   bot has waited `max_wait_s`; before that it deals nothing and says when to
   look again (`Step.retry_at`). Why hold: the tables of a board are what its
   luck cancels across (`ratings.luck`) and what the grouping chooses among.
   Dealing to the first six bots free gives boards of two tables and no
   choice; bench/arena.py measures what the batch buys and what it costs.
3. **Who plays**: every free bot but the remainder (free bots modulo the
   table size), in order of priority: the fewest games under way (an idle
   bot first), then new bots (fewer than `placement` games, so their
   placement games come first), then the longest waiting, then the fewest
   games. A bot is never passed over for one that has waited less with as
   many games under way (new bots aside), so game rates stay within what
   the bots' own speeds make them.
4. **Grouping**: the tables that maximise the summed value of
   `tournaments.arena_search` (in 3p by default the expected fall of each
   table's rating variances, from the fit's ratings and covariance; in 2v2
   none yet, so random tables, see below), after keeping
   apart any two bots that sat together in either's last `avoid` games
   wherever the pool allows (a cost far above any gain), and in 2v2 not
   partnering recent partners again where the teams can be split otherwise;
   before all of that, never two bots of one group (`Candidate.groups`: one
   author's bots, a declared group's, `tournaments.apart`) at one table,
   partners or opponents, wherever the pool allows (a cost far above every
   repeat). A local search of exchanges between tables, vectorised. Where the
   seated bots cannot be split so (one group holds more of them than there are
   tables: one author's bots alone in a small pool), the step still deals, with
   as few such pairs as it finds, and names the groups each such table seats
   (`Table.kin`) for its caller to count and note: an arena that starved
   whenever one author's bots outnumbered the tables would stop a small or
   private pool, and the tournaments deal what they cannot keep apart and say
   so (docs/architecture.md, "Collusion across tables").
5. **Seats**: each table's order that puts each bot where it has sat least.
6. **Boards**: ceil(tables / `max_tables`) boards of two to `max_tables`
   tables, tables dealt to them in turn by strength, then exchanged between
   boards while two tables of one board seat bots of one group
   (`_deal_tables`: where the boards allow, none needs dealing apart after, and
   their sizes are those of a pass without groups, so a watcher counting tables
   learns nothing of who is grouped); a board is named
   `<arena>/b<next_board + i>`, and the step refuses (FailedPrecondition) to
   deal one to a bot whose record holds it: board numbers only grow.

Why the variance fall: a game's result is worth what it tells about the
ratings, and what the ratings need is a smaller error. With Gaussian
uncertainty Sigma over the strengths and a game whose Fisher information at
the current ratings is J (on the table's bots), the result leaves
Sigma - Sigma J (I + Sigma J)^-1 Sigma; the fall of the table's own
variances, tr of that update on the table's block, is the expected fall of
their squared errors (A-optimality, taken greedily). It needs only the
table's 3 x 3 (or 4 x 4) block of Sigma, so a step is cheap; the fall of the
other bots' variances (through their covariance with the table) is left out,
which would cost a row of Sigma^2 per candidate table. The value grows with
the chance that the result is uncertain (J is largest between equals), with
the bots' uncertainty (a new bot, 400 Elo, gains most, so its placement
games go to the tables that place it fastest: opponents near its estimate)
and with how little is known of how the table's
bots compare: two bots that met often are highly correlated in the fit, the
variance of their difference is small, and another game between them
teaches little. So one quantity covers what a choice of tables should weigh:
informative results, placement, and variety of opponents (which the
covariance sees for released games, and `avoid` for the games still under
way). The similar-rating rule (Kaggle's) gets the first alone, and in a
large free pool it forms chains of neighbours whose far ends are compared
through many links; random tables get variety but lopsided games. The
expected information (D-optimality, 0.5 log det(I + Sigma J), `objective=
"information"`) weighs the same things on a log scale.

What bench/arena.py measured (docs/PERFORMANCE.md, 100 bots coming and
going, equal games): most of the gain over random and similar-rating tables
dealt as soon as two tables can be is the batch. Holding for a quarter of
the online bots gives boards of 5.5 tables instead of 2, whose luck the fit
estimates and cancels, for 5% of the game rate: RMSE 57.7 against 74.6
(random) and 65.8 (similar) Elo at 30 games a bot, 24.4 against 32.9 and
31.0 at 100. In the same batches the grouping beats random tables and is
level with similar ratings within the Monte-Carlo error when about 20 bots
are free a step (the free bots are a random sample of the pool, so sorting
them builds no chains); with 50 free at once it beats both. The D-optimal
objective and the variance fall without the covariance were level with it
or a little behind.

Why 2v2 groups at random (`POOL_OBJECTIVE`): in 2v2 the variance fall
makes even teams, and from games between even teams the batch fit stretches
its fresh-deal scale (bench/arena.py --pool 2v2: slope 1.14 on the truth at
100 games a bot, intervals covering 0.91), so its RMSE is 5 Elo worse than
random tables in the same batches although it ranks better. In 3p the
scale holds (slopes 0.99 to 1.02). Random tables keep the batches, the
seats and the avoidance of recent table-mates and partners.

What the step leaves to its caller: the deal seed of a board (derive it from
a secret and the board id, `tournaments.plan.derive_seed`), storing the
boards and games, counting boards, and reading the free bots, their records
and the fit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from store.errors import FailedPrecondition, InvalidArgument
from store.pools import Pool
from tournaments.arena_search import OBJECTIVES, Scorer, search

__all__ = [
    "ELO_PER_NAT",
    "POOLS",
    "POOL_OBJECTIVE",
    "PRIOR_SD",
    "Board",
    "Candidate",
    "Covariance",
    "Request",
    "Settings",
    "Step",
    "Table",
    "least_online",
    "step",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

POOLS = {str(p): p.players for p in Pool}  # players at a table
# The grouping each pool gets by default (module doc: why 2v2 groups at random for now).
POOL_OBJECTIVE = {"3p": "variance", "2v2": "random"}
ELO_PER_NAT = 400.0 / math.log(10.0)  # as `ratings.scale` (which this package may not import)
PRIOR_SD = 400.0  # Elo: the batch fit's prior (`ratings.PRIOR_SD`), a new bot's uncertainty


@dataclass(frozen=True, slots=True)
class Candidate:
    """One joined, connected bot of the pool with a free slot (fewer games than allowed)."""

    bot_id: str
    rating: float = 0.0  # Elo, pool mean 0 (the fit's); 0 for a bot without rated games
    sd: float = PRIOR_SD  # Elo: the fit's standard error; PRIOR_SD for a bot without games
    games: int = 0  # games it finished in this pool
    in_progress: int = 0  # games it is playing now
    free_since: float = 0.0  # when (seconds, the arena's clock) its free slot opened
    # Table-mates of its latest games (live ones too), newest first: 3p two a game, 2v2 three,
    # the partner first. `Settings.avoid` games of them are kept apart; in 2v2 no partner of
    # any of them is its partner again where the teams can be split otherwise.
    recent: tuple[str, ...] = ()
    seats: tuple[int, ...] = ()  # games it held each seat in (3p: 3, 2v2: 4); () for none yet
    dealt: frozenset[str] = frozenset()  # every board it has been dealt, for the life of the stack
    # The groups it is kept apart in (`tournaments.apart`: its author's, declared ones): two
    # bots sharing one never sit at one table where the pool allows. House bots: none.
    groups: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, eq=False)
class Covariance:
    """The fit's covariance of the ratings (Elo^2), rows and columns in `bot_ids` order."""

    bot_ids: tuple[str, ...]
    matrix: FloatArray


@dataclass(frozen=True, slots=True)
class Settings:
    """The arena's matchmaking rules: the organiser's, defaults measured by bench/arena.py."""

    concurrency: int = 2  # games a bot may play at once
    placement: int = 10  # a bot with fewer games (finished and live) is new: it is seated first
    avoid: int = 2  # two bots that sat together in either's last `avoid` games are kept apart
    batch: float = 0.25  # deal once this share of the online bots is free ...
    max_wait_s: float = 10.0  # ... or once a free bot has waited this long
    max_tables: int = 64  # tables on one board (a board is released when all have finished)
    # "variance", "information", "similar" or "random"; "" for the pool's (`POOL_OBJECTIVE`).
    objective: str = ""
    rounds: int = 24  # most rounds of exchanges in the search


@dataclass(frozen=True, slots=True, eq=False)
class Request:
    """What one matchmaking step reads: the pool, its free bots, and where boards are numbered."""

    pool: str  # "3p" or "2v2"
    arena: str  # board ids are "<arena>/b<number>"
    next_board: int  # the number of the next new board
    now: float  # seconds, the arena's clock (as Candidate.free_since)
    online: int  # joined and connected bots of the pool, free or not
    bots: tuple[Candidate, ...]  # the free ones
    seed: int  # the step's grouping is a function of the request and this seed
    settings: Settings = field(default_factory=Settings)
    covariance: Covariance | None = None  # without it, ratings count as independent


@dataclass(frozen=True, slots=True)
class Table:
    """One game: bot ids by seat (3p: seat s; 2v2: seat s plays for team s % 2)."""

    seats: tuple[str, ...]
    variance_fall: float  # the expected fall of its bots' rating variances, Elo^2 (summed)
    information: float  # the expected information of its result about the ratings, nats
    kin: tuple[str, ...] = ()  # groups of which it seats two bots (only where unavoidable)


@dataclass(frozen=True, slots=True)
class Board:
    """A new board and the tables (two or more) that play it, one game each."""

    board_id: str
    tables: tuple[Table, ...]


@dataclass(frozen=True, slots=True)
class Step:
    """What a step decided: boards to create now, who waits, and when to look again."""

    boards: tuple[Board, ...]
    waiting: tuple[str, ...]  # free bots left unseated, first in line first
    next_board: int  # the number after the last board used
    retry_at: float | None  # holding for a batch: step again then if nothing changes
    reason: str  # empty when boards were dealt, else why not


def least_online(pool: str) -> int:
    """The fewest online bots a pool's arena can deal a board to (two tables)."""
    return 2 * _players(pool)


def _players(pool: str) -> int:
    """Seats at a table of a pool."""
    if pool not in POOLS:
        raise InvalidArgument(f"pool: must be one of {', '.join(POOLS)}, got {pool!r}")
    return POOLS[pool]


def _check_settings(s: Settings) -> None:
    """InvalidArgument naming the first setting out of range."""
    if not isinstance(s.concurrency, int) or s.concurrency < 1:
        raise InvalidArgument(f"concurrency: must be at least 1 game at once, got {s.concurrency}")
    if s.placement < 0 or s.avoid < 0 or s.rounds < 0:
        raise InvalidArgument("placement, avoid and rounds: must not be negative")
    if not 0.0 <= s.batch <= 1.0:
        raise InvalidArgument(f"batch: must be a share between 0 and 1, got {s.batch}")
    if not (math.isfinite(s.max_wait_s) and s.max_wait_s >= 0):
        raise InvalidArgument(f"max_wait_s: must be a number of seconds >= 0, got {s.max_wait_s}")
    if s.max_tables < 3:
        # With 3 or more, any number of tables >= 2 splits into boards of 2 to max_tables.
        raise InvalidArgument(f"max_tables: must be at least 3, got {s.max_tables}")
    if s.objective and s.objective not in OBJECTIVES:
        raise InvalidArgument(f"objective: must be one of {', '.join(OBJECTIVES)}, "
                              f"got {s.objective!r}")


def _check_bot(c: Candidate, k: int, concurrency: int) -> None:
    """InvalidArgument naming the bot and its field when a candidate does not add up."""
    where = f"bot {c.bot_id!r}"
    if not isinstance(c.bot_id, str) or not c.bot_id:
        raise InvalidArgument(f"bots: a bot id must be a non-empty string, got {c.bot_id!r}")
    if not (math.isfinite(c.rating) and math.isfinite(c.sd) and c.sd > 0):
        raise InvalidArgument(f"{where}: rating and sd must be finite and sd > 0, "
                              f"got {c.rating}, {c.sd}")
    if c.games < 0 or c.in_progress < 0:
        raise InvalidArgument(f"{where}: games and in_progress must not be negative")
    if c.in_progress >= concurrency:
        raise InvalidArgument(f"{where}: plays {c.in_progress} games of {concurrency} "
                              "allowed at once, so it is not free")
    if not math.isfinite(c.free_since):
        raise InvalidArgument(f"{where}: free_since must be a time, got {c.free_since}")
    if c.seats and (len(c.seats) != k or min(c.seats) < 0):
        raise InvalidArgument(f"{where}: seats must count games at each of the {k} seats")
    if not all(isinstance(g, str) and g for g in c.groups):
        raise InvalidArgument(f"{where}: a group must be named by a non-empty string")


def _check(req: Request, k: int) -> tuple[Candidate, ...]:
    """The request's free bots sorted by id, after checking everything (InvalidArgument)."""
    _check_settings(req.settings)
    if not req.arena:
        raise InvalidArgument("arena: must name the arena, for its board ids")
    if req.next_board < 0:
        raise InvalidArgument(f"next_board: must not be negative, got {req.next_board}")
    if not math.isfinite(req.now):
        raise InvalidArgument(f"now: must be a time, got {req.now}")
    for c in req.bots:
        _check_bot(c, k, req.settings.concurrency)
    bots = tuple(sorted(req.bots, key=lambda c: c.bot_id))
    twice = [a.bot_id for a, b in itertools.pairwise(bots) if a.bot_id == b.bot_id]
    if twice:
        raise InvalidArgument(f"bots: {twice[0]!r} is listed twice")
    if req.online < len(bots):
        raise InvalidArgument(f"online: {req.online} bots online but {len(bots)} free")
    if req.covariance is not None:
        cov = req.covariance
        n = len(cov.bot_ids)
        if cov.matrix.shape != (n, n) or not np.isfinite(cov.matrix).all():
            raise InvalidArgument(f"covariance: must be a finite {n} x {n} matrix")
        if len(set(cov.bot_ids)) != n:
            raise InvalidArgument("covariance: names a bot twice")
    return bots


def _priority(bots: Sequence[Candidate], placement: int) -> list[int]:
    """Indices of the bots, first to be seated first.

    Fewest games under way first (a bot playing none is idle); then new bots,
    whose placement games come before anything else; then the longest waiting;
    of bots free since the same moment (seated together), the fewest games.
    """
    return sorted(range(len(bots)), key=lambda i: (
        bots[i].in_progress,
        bots[i].games + bots[i].in_progress >= placement,
        bots[i].free_since,
        bots[i].games,
        bots[i].bot_id,
    ))


def _variances(req: Request, seated: Sequence[Candidate]) -> FloatArray:
    """Each seated bot's rating variance in natural-log units: the covariance's diagonal for
    the bots it holds, else the square of the bot's sd."""
    var = (np.array([c.sd for c in seated]) / ELO_PER_NAT) ** 2
    rows = _rows(req, seated)
    if rows is not None and req.covariance is not None:
        known = rows >= 0
        var[known] = np.diagonal(req.covariance.matrix)[rows[known]] / ELO_PER_NAT**2
    out: FloatArray = var
    return out


def _rows(req: Request, seated: Sequence[Candidate]) -> IntArray | None:
    """Each seated bot's row in the request's covariance (-1: not in it), or None without one."""
    if req.covariance is None:
        return None
    index = {b: i for i, b in enumerate(req.covariance.bot_ids)}
    return np.array([index.get(c.bot_id, -1) for c in seated], dtype=np.int64)


def _recent(seated: Sequence[Candidate], k: int, avoid: int) -> NDArray[np.bool_]:
    """(s, s): True where two seated bots sat together in either's last `avoid` games."""
    index = {c.bot_id: i for i, c in enumerate(seated)}
    out = np.zeros((len(seated), len(seated)), dtype=np.bool_)
    depth = avoid * (k - 1)  # a game has k - 1 table-mates
    for i, c in enumerate(seated):
        for mate in c.recent[:depth]:
            j = index.get(mate)
            if j is not None and j != i:
                out[i, j] = out[j, i] = True
    return out


def _partners(seated: Sequence[Candidate]) -> NDArray[np.bool_]:
    """2v2, (s, s): True where two seated bots were partners in either's recent games."""
    index = {c.bot_id: i for i, c in enumerate(seated)}
    out = np.zeros((len(seated), len(seated)), dtype=np.bool_)
    for i, c in enumerate(seated):
        for mate in c.recent[::3]:  # each game's three table-mates, its partner first
            j = index.get(mate)
            if j is not None and j != i:
                out[i, j] = out[j, i] = True
    return out


def _kin(seated: Sequence[Candidate]) -> NDArray[np.bool_] | None:
    """(s, s): True where two seated bots share a group; None when none do."""
    index: dict[str, list[int]] = {}
    for i, c in enumerate(seated):
        for g in c.groups:
            index.setdefault(g, []).append(i)
    out = np.zeros((len(seated), len(seated)), dtype=np.bool_)
    for members in index.values():
        if len(members) > 1:
            at = np.array(members)
            out[np.ix_(at, at)] = True
    np.fill_diagonal(out, False)
    return out if out.any() else None


_ORDERS = {k: np.array(list(itertools.permutations(range(k))), dtype=np.int64) for k in (3, 4)}
# 2v2: a table's first two bots are a team, its last two the other; seat s plays for team s % 2.
_TEAM_ORDERS = np.array([o for o in itertools.permutations(range(4))
                         if {o[0], o[2]} in ({0, 1}, {2, 3})], dtype=np.int64)


def _seat(tables: IntArray, counts: IntArray) -> IntArray:
    """Each table's bots in seat order: the order that puts each where it sat least."""
    k = tables.shape[1]
    orders = _ORDERS[3] if k == 3 else _TEAM_ORDERS
    bots = tables[:, orders]  # (tables, orders, k): bots by seat under each order
    load = counts[bots, np.arange(k)].sum(axis=2)
    out: IntArray = bots[np.arange(len(tables)), load.argmin(axis=1)]
    return out


def _hold(bots: Sequence[Candidate], order: Sequence[int], next_board: int,
          retry_at: float | None, reason: str) -> Step:
    """A step that deals nothing."""
    return Step((), tuple(bots[i].bot_id for i in order), next_board, retry_at, reason)


def _held(req: Request, bots: Sequence[Candidate], order: Sequence[int], k: int
          ) -> Step | None:
    """The step that deals nothing, when too few bots are free or the batch is not full."""
    free, s = len(bots), req.settings
    if free < 2 * k:
        return _hold(bots, order, req.next_board, None,
                     f"{free} bots are free; a board needs two tables ({2 * k} bots)")
    oldest = min(c.free_since for c in bots)
    enough = max(2 * k, math.ceil(s.batch * req.online))
    if free < enough and req.now - oldest < s.max_wait_s:
        return _hold(bots, order, req.next_board, oldest + s.max_wait_s,
                     f"{free} bots are free; holding for {enough} or until "
                     f"{oldest + s.max_wait_s:.3f}")
    return None


def _scorer(req: Request, seated: Sequence[Candidate], k: int) -> Scorer:
    """What values the tables of the seated bots (`tournaments.arena_search`)."""
    s = req.settings
    return Scorer(
        players=k,
        objective=s.objective or POOL_OBJECTIVE[req.pool],
        mu=np.array([c.rating for c in seated]) / ELO_PER_NAT,
        var=_variances(req, seated),
        recent=_recent(seated, k, s.avoid),
        partners=_partners(seated) if k == 4 else None,
        matrix=None if req.covariance is None else np.ascontiguousarray(
            req.covariance.matrix, dtype=np.float64),
        row=_rows(req, seated),
        unit=ELO_PER_NAT**-2,
        kin=_kin(seated),
    )


def _tables(req: Request, seated: Sequence[Candidate], scorer: Scorer) -> IntArray:
    """The seated bots (indices) grouped into tables, each in seat order."""
    k = scorer.players
    tables, _, splits = search(scorer, len(seated), np.random.default_rng(req.seed),
                               req.settings.rounds)
    if k == 4:
        # Put each group's chosen teams first and second: (a, b) against (c, d).
        tables = np.take_along_axis(tables, _SPLIT_ORDER[splits], axis=1)
    counts = np.array([c.seats if c.seats else (0,) * k for c in seated], dtype=np.int64)
    return _seat(tables, counts)


def _boards(req: Request, seated: Sequence[Candidate], scorer: Scorer, tables: IntArray
            ) -> tuple[Board, ...]:
    """The tables on new boards of two to max_tables, refusing a board a bot was dealt."""
    # Reported whatever the objective: what each game is expected to teach.
    teams = tables[:, [0, 2, 1, 3]] if scorer.players == 4 else tables
    falls = scorer.reduction(teams) * ELO_PER_NAT**2
    gains = scorer.information(teams)
    # Tables are dealt to boards in turn by rating, so each board holds strong and weak tables.
    by_strength = np.argsort(-scorer.mu[tables].mean(axis=1), kind="stable")
    n_boards = math.ceil(len(tables) / req.settings.max_tables)
    boards = []
    for b, rows in enumerate(_deal_tables(by_strength.tolist(), n_boards, [
            frozenset().union(*(seated[i].groups for i in t)) for t in tables])):
        board_id = f"{req.arena}/b{req.next_board + b}"
        out = []
        for r in rows:
            for i in tables[r]:
                if board_id in seated[i].dealt:
                    raise FailedPrecondition(
                        f"board {board_id} was dealt to bot {seated[i].bot_id} before: the "
                        "arena's board numbers must only grow")
            ids = tuple(seated[i].bot_id for i in tables[r])
            out.append(Table(ids, float(falls[r]), float(gains[r]),
                             _shared_groups([seated[i] for i in tables[r]])))
        boards.append(Board(board_id, tuple(out)))
    return tuple(boards)


def _deal_tables(order: Sequence[int], n_boards: int, groups: Sequence[frozenset[str]]
                 ) -> list[list[int]]:
    """Tables (in `order`) dealt to `n_boards` boards in turn, then, while two tables of
    one board share a group, one of them exchanged with a table of another board where
    that leaves fewer such pairs (`_exchange`). So where the pass's boards allow, no
    board seats two bots of one group at two of its tables and none has to be dealt
    apart afterwards; the boards' number and sizes are those of a pass without groups,
    so a watcher counting tables sees nothing. Deterministic."""
    dealt = [list(order[b::n_boards]) for b in range(n_boards)]
    if any(groups):
        for _ in range(len(order) ** 2):  # each exchange removes a pair at least
            if not _exchange(dealt, groups):
                break
    return dealt


def _exchange(dealt: list[list[int]], groups: Sequence[frozenset[str]]) -> bool:
    """The first exchange (in board and table order) of a table that shares a group
    with another of its board for a table of another board that leaves fewer such
    pairs; whether there was one."""
    def clashes(rows: Sequence[int], r: int) -> int:
        return sum(1 for q in rows if q != r and groups[q] & groups[r])

    for b, rows in enumerate(dealt):
        for r in rows:
            if not (mine := clashes(rows, r)):
                continue
            rest = [x for x in rows if x != r]
            for c, other in enumerate(dealt):
                if c == b:
                    continue
                for q in other:
                    # The pairs it removes (r's on b, q's on c) less those it makes.
                    made = clashes([*rest, q], q) + clashes([x for x in other if x != q], r)
                    if mine + clashes(other, q) > made:
                        rows[rows.index(r)], other[other.index(q)] = q, r
                        return True
    return False


def _shared_groups(table: Sequence[Candidate]) -> tuple[str, ...]:
    """The groups of which a table seats two bots, sorted."""
    seen: set[str] = set()
    out: set[str] = set()
    for c in table:
        out |= seen & c.groups
        seen |= c.groups
    return tuple(sorted(out))


def step(req: Request) -> Step:
    """One matchmaking step (module doc): InvalidArgument for bad input, FailedPrecondition
    when the pool has too few bots online or a board number was dealt before."""
    k = _players(req.pool)
    bots = _check(req, k)
    if req.online < 2 * k:
        raise FailedPrecondition(
            f"the {req.pool} arena needs at least {2 * k} bots online to deal a board to two "
            f"tables; {req.online} {'is' if req.online == 1 else 'are'} online")
    order = _priority(bots, req.settings.placement)
    held = _held(req, bots, order, k)
    if held is not None:
        return held
    t = len(bots) // k
    seated = [bots[i] for i in order[: t * k]]
    scorer = _scorer(req, seated, k)
    boards = _boards(req, seated, scorer, _tables(req, seated, scorer))
    waiting = tuple(bots[i].bot_id for i in order[t * k:])
    return Step(boards, waiting, req.next_board + len(boards), None, "")


_SPLIT_ORDER = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]], dtype=np.int64)
