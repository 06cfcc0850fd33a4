"""The arena's matchmaking step, as the body of an RQ job: load what changed, call the pure
step (`tournaments.arena.step`), store.

`run_step(r, rq_conn, pool)` runs whenever bots may be free: a bot joined or came
back, a game of the arena ended, or a step that held for a batch asked to be woken at
its `retry_at` (the recovery pass does that, and queues a step that was asked for and
lost). Steps are coalesced like the rating fit: many asks, one queued job, which
loops while asks keep coming; runs of one arena are serialized by a lock.

One pass:

1. creates the games an earlier pass decided and saved but may have died before
   creating (`creating` in the state; creation is idempotent: ids derive from the
   board and table);
2. folds in the games recorded since its cursor: each bot's games under way and
   finished, the boards' finished tables; a board whose every table has finished is
   released (its games become public, join the pool's ratings and a fit is asked for);
3. while the arena runs, reads the joined bots that are connected (house anchors
   always are) with a free slot, their fitted ratings and records, and calls the
   step with a seed derived from the arena's seed and the next board number; each
   board it deals goes through `store.deals.deal` (the stack's secret, and every
   remote bot's record of deals: no bot is dealt a deal twice);
4. saves the new state, the decided games and the next board number with it, in one
   compare-and-set; only then creates and queues the games.

So a pass killed anywhere is redone from the saved state: before the save, nothing
it decided exists (a board's deal it claimed stays on the records of its bots,
harmless: that board number is dealt again, to the tables the redo forms, and no
one plays a deal twice); after it, the games are created by whichever pass comes
next. The state holds, per bot, what the step needs (games under way and finished,
since when it is free, recent table-mates, seats held), so a step reads one JSON
value, the joined set, the bots' presence and the fit, whatever the arena's age.
`Candidate.dealt` is left empty: board numbers only grow (the counter moves in the
compare-and-set), and the deal record refuses any deal a bot had before, which is
the cheaper equivalent of handing the step every board each bot was dealt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import redis
from scipy import stats

from store import arena as store_arena
from store import deals, ids
from store import matches as store_matches
from store import ratings as store_ratings
from store import recovery as store_recovery
from store.arena import ArenaSpec, ArenaStatus
from store.errors import FailedPrecondition
from store.records import MatchSpec
from tournaments import arena
from tournaments.plan import derive_seed
from workers import failpoints, metrics
from workers.queues import enqueue_match, request_fit

__all__ = ["LOCK_MS", "MAX_PASSES", "arena_name", "board_of", "game_id", "run_step"]

log = logging.getLogger("moonshot.arena")

MAX_PASSES = 8  # passes a job makes before it yields the control queue to others
LOCK_MS = 10_000  # extended after every pass (one takes well under a second); a dead run's
# lock lapses this soon, and recovery queues the step it owed
_AVOID = arena.Settings().avoid  # games of table-mates each bot remembers


def arena_name(pool: str) -> str:
    """The arena's name in its board ids: `arena-3p`, `arena-2v2`."""
    return f"arena-{pool}"


def board_of(pool: str, number: int) -> str:
    """Board `number` of a pool's arena: `arena-3p/b17`."""
    return f"{arena_name(pool)}/b{number}"


def game_id(pool: str, number: int, table: int) -> str:
    """The game of table `table` of board `number`: `m-a3pb17t0` (a match id)."""
    return f"m-a{pool}b{number}t{table}"


def run_step(r: redis.Redis, rq_conn: redis.Redis, pool: str,
             lock_ms: int = LOCK_MS) -> dict[str, Any]:
    """The job: matchmaking passes of the pool's arena while asks keep coming."""
    store_arena.unqueue(r, pool)  # asks from now on queue another job
    lock = store_arena.step_lock(pool, lock_ms)
    if not lock.acquire(r):
        return {"pool": pool, "skipped": "another step of this arena runs"}
    summary: dict[str, Any] = {"pool": pool}
    passes = 0
    try:
        # At most MAX_PASSES a job: asks that never stop (bots coming and going) then take
        # turns on the control queue with the other jobs; the ask left standing queues
        # the next job (or recovery's nudge does).
        while passes < MAX_PASSES and store_arena.take_step(r, pool):
            passes += 1
            started = time.perf_counter()
            summary = _pass(r, rq_conn, pool)
            metrics.ARENA_STEP_SECONDS.labels(pool).observe(time.perf_counter() - started)
            metrics.ARENA_STEPS.labels("skipped" if "skipped" in summary else "done").inc()
            if not lock.extend(r):
                log.warning("arena %s: this step's lock lapsed; another run goes on", pool)
                return {**summary, "skipped": "lost the lock after a pass"}
    finally:
        lock.release(r)
    return summary


def _fresh() -> dict[str, Any]:
    """The state of an arena before its first step."""
    return {"v": 1, "seq": 0, "cursor": 0, "next_board": 1, "games": 0, "released": 0,
            "tables": 0, "open": {}, "bots": {}, "creating": []}


def _pass(r: redis.Redis, rq_conn: redis.Redis, pool: str) -> dict[str, Any]:
    found = store_arena.arena_of(r, pool)
    if found is None:
        return {"pool": pool, "skipped": "no arena"}
    spec = found.spec
    st = store_arena.state(r, pool) or _fresh()
    expected = int(st["seq"])
    _create(r, rq_conn, pool, st["creating"])  # what a pass that died may not have created
    st["creating"] = []
    now = store_recovery.now(r)  # Redis's clock: the one every worker shares
    _fold(r, rq_conn, spec, st, now)
    figures: dict[str, Any] = {"holding": "the arena is stopped"}
    retry_at = None
    dealt: list[arena.Board] = []
    if found.status == ArenaStatus.RUNNING:
        dealt, retry_at, figures = _match(r, spec, st, now)
    failpoints.reached("arena.before-save")
    if not store_arena.save_state(r, pool, expected, st):
        return {"pool": pool, "skipped": "another run saved first"}
    failpoints.reached("arena.after-save")
    created = _create(r, rq_conn, pool, st["creating"])
    metrics.ARENA_TABLES.labels(pool).inc(sum(len(b.tables) for b in dealt))
    figures.update(_counts(st), step_at=time.time())
    store_arena.note_step(r, pool, figures, retry_at)
    return {"pool": pool, "boards": len(dealt), "created": created, **figures}


def _counts(st: dict[str, Any]) -> dict[str, Any]:
    """The state's running totals, as GetArena and the metrics show them."""
    playing = sum(int(b[0]) - int(b[1]) for b in st["open"].values())
    return {"boards": int(st["next_board"]) - 1, "games": int(st["games"]),
            "released": int(st["released"]), "tables": int(st["tables"]), "playing": playing}


# ------------------------------------------------------------ results


def _fold(r: redis.Redis, rq_conn: redis.Redis, spec: ArenaSpec, st: dict[str, Any],
          now: float) -> None:
    """Fold in the games recorded since the cursor; release the boards they complete."""
    recorded = store_arena.recorded_after(r, spec.pool, int(st["cursor"]))
    if not recorded:
        return
    rows = store_matches.read_rows(r, [mid for mid, _ in recorded])
    players: dict[str, list[str]] = {}
    for bot_id, b in st["bots"].items():
        for mid in b["live"]:
            players.setdefault(mid, []).append(bot_id)
    board_of_game = {mid: board for board, g in st["open"].items() for mid in g[2]}
    done: list[str] = []
    for mid, number in recorded:
        st["cursor"] = number
        for bot_id in players.get(mid, ()):
            b = st["bots"][bot_id]
            full = len(b["live"]) >= spec.concurrency
            b["live"].remove(mid)
            b["games"] += 1 if mid in rows else 0  # a failed game counts for nothing
            if full or b.get("free") is None:
                b["free"] = now
        board = board_of_game.get(mid)
        if board is not None:
            g = st["open"][board]
            g[1] += 1
            if g[1] >= g[0]:
                done.append(board)
    _release(r, rq_conn, spec, st, done)


def _release(r: redis.Redis, rq_conn: redis.Redis, spec: ArenaSpec, st: dict[str, Any],
             boards: Sequence[str]) -> None:
    """Make the games of finished boards public and rated. Idempotent: a pass redone after a
    crash releases nothing twice."""
    if not boards:
        return
    when = time.time()
    for board in boards:
        match_ids = list(st["open"].pop(board)[2])
        rows = store_matches.read_rows(r, match_ids)
        for mid in match_ids:
            if mid not in rows:
                continue  # failed: nothing to show or rate
            st["released"] += 1
            store_matches.release(r, mid, spec.players, when)
            metrics.finished(str(rows[mid].get("end", "")), int(rows[mid].get("actions", 0)))
            store_arena.mark_released(r, spec.pool, mid, int(st["released"]))
    request_fit(r, rq_conn, spec.pool)


# ------------------------------------------------------------ matchmaking


def _match(r: redis.Redis, spec: ArenaSpec, st: dict[str, Any], now: float
           ) -> tuple[list[arena.Board], float | None, dict[str, Any]]:
    """Call the step on the free bots; deal and note the boards it forms."""
    pool = spec.pool
    online = store_arena.online(r, pool, spec.anchors)
    for bot_id in online:
        st["bots"].setdefault(bot_id, {"live": [], "games": 0, "free": None, "recent": [],
                                       "seats": []})
    free = [b for b in online if len(st["bots"][b]["live"]) < spec.concurrency]
    settings = arena.Settings(concurrency=spec.concurrency, max_wait_s=spec.max_wait_ms / 1000)
    rated = _ratings(r, pool)
    request = arena.Request(
        pool=pool, arena=arena_name(pool), next_board=int(st["next_board"]), now=now,
        online=len(online), seed=derive_seed(spec.seed, f"step/{st['next_board']}"),
        settings=settings,
        bots=tuple(_candidate(b, st["bots"][b], rated.get(b), now) for b in free))
    try:
        step = arena.step(request)
        boards, waiting, holding = list(step.boards), step.waiting, step.reason
    except FailedPrecondition as exc:  # too few online for two tables: nothing to do
        boards, waiting, holding = [], tuple(free), str(exc)
        step = None
    seated = {b for board in boards for t in board.tables for b in t.seats}
    for bot_id, b in st["bots"].items():  # only an online bot with a free slot is free
        if bot_id not in free:
            b["free"] = None
        elif b.get("free") is None:
            b["free"] = now
    if boards:
        _deal(r, spec, st, boards, now)
    figures = {"online": len(online), "free": len(free), "waiting": len(waiting),
               "seated": len(seated), "holding": holding}
    return boards, None if step is None else step.retry_at, figures


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
               now: float) -> arena.Candidate:
    """A free bot as the step sees it."""
    rating, sd, games = rated if rated is not None else (0.0, arena.PRIOR_SD, 0)
    return arena.Candidate(
        bot_id=bot_id, rating=rating, sd=sd, games=max(games, int(b["games"])),
        in_progress=len(b["live"]), free_since=float(b["free"] if b.get("free") else now),
        recent=tuple(b["recent"]), seats=tuple(b["seats"]))


def _deal(r: redis.Redis, spec: ArenaSpec, st: dict[str, Any], boards: Sequence[arena.Board],
          now: float) -> None:
    """Deal each board through the stack's secret (claimed for its remote bots), and note
    its games in the state: to create, under way for their bots, open on their board."""
    pool, k = spec.pool, spec.players
    names = store_arena.names(r, {b for board in boards for t in board.tables for b in t.seats})
    for board in boards:
        number = int(board.board_id.rpartition("/b")[2])
        remote = {b for t in board.tables for b in t.seats if not ids.is_house_bot(b)}
        seed, refused = deals.deal(r, derive_seed(spec.seed, board.board_id), board.board_id,
                                   remote)
        if refused:
            log.info("arena %s: board %s dealt afresh (%d deal(s) refused: a bot had been "
                     "dealt them)", pool, board.board_id, refused)
        match_ids = []
        for i, table in enumerate(board.tables):
            mid = game_id(pool, number, i)
            match_ids.append(mid)
            mspec = MatchSpec(
                match_id=mid, rules=spec.rules, seed=seed, bot_ids=table.seats,
                seat_names=tuple(names[b] for b in table.seats), clock=spec.clock,
                faults=spec.faults, meta={"arena": pool, "board": board.board_id,
                                          "unit": f"b{number}"})
            st["games"] += 1
            st["creating"].append([mspec.to_json(), int(st["games"])])
            for seat, bot_id in enumerate(table.seats):
                _seated(st["bots"][bot_id], mid, seat, table.seats, k, spec.concurrency, now)
        st["open"][board.board_id] = [len(board.tables), 0, match_ids]
        st["tables"] += len(board.tables)
        st["next_board"] = max(int(st["next_board"]), number + 1)


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


def _create(r: redis.Redis, rq_conn: redis.Redis, pool: str, creating: list[Any]) -> int:
    """Store and queue the games decided (a game that exists is left as it is), then list
    them in the arena's index. Each pass is handed the previous pass's list again (the
    crash-safe way), and most of it exists by then: one round trip finds which."""
    if not creating:
        return 0
    specs = [(MatchSpec.from_json(text), int(number)) for text, number in creating]
    there = store_matches.exist(r, [m.match_id for m, _ in specs])
    created = 0
    now = time.time()
    for i, ((mspec, _), found) in enumerate(zip(specs, there, strict=True)):
        if not found and store_matches.create_match(r, mspec, listed_at=now + i * 1e-6):
            enqueue_match(rq_conn, mspec.match_id)
            created += 1
    store_arena.add_games(r, pool, {m.match_id: n for m, n in specs})
    return created
