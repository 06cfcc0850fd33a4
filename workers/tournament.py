"""Tournaments: the spec, the plan of games, and the scheduler step that advances them.

The plan is a pure function of the spec and the results so far
(`plan(spec, results)`): every game it contains has an id derived from the
spec (`<tournament>-<unit>-g<k>`), so running the scheduler again, after a
retry or a restart, finds the games it made before and never makes a second
copy. `advance(r, tournament_id)` is the RQ job around it: it loads results,
creates and queues the games the plan adds, emits events once each, and marks
the tournament finished.

Units of play (each a duplicate set that shares one deal seed):

- 3p round robin: a table of three plays one game per seating (6 with
  duplicate deals), tables from `workers.design.triple_design`.
- 2v2 round robin: a pairing plays twice with the teams swapping seats.
- 2v2 bracket match: a best-of-N series of such duplicate pairs.
- 3p bracket table: a duplicate set; its ranking (`standings.rank_group`) decides.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from moon import MoonError, Rules
from moon.deal import MAX_SEED
from workers import bracket as brk
from workers import design, events, keys, store
from workers.errors import FailedPrecondition, InvalidArgument, NotFound
from workers.outcome import read_rows
from workers.spec import DEFAULT_CLOCK, DEFAULT_FAULTS, Clock, Faults, MatchSpec
from workers.standings import rank_group, standings

__all__ = [
    "FORMATS",
    "Game",
    "Plan",
    "TournamentSpec",
    "advance",
    "create_tournament",
    "load_spec",
    "plan",
]

log = logging.getLogger("moonshot.tournament")

FORMATS = ("round_robin", "single_elimination", "double_elimination")
SEEDINGS = ("rating", "given")
MAX_ROUNDS = 100
_LOCK_MS = 30_000  # renewed after every pass; a dead run's lock lapses this soon


def _derive_seed(seed: int, unit: str) -> int:
    """The deal seed of a unit: fixed by the tournament seed and the unit's id."""
    digest = hashlib.sha256(f"{seed}:{unit}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    """A validated tournament; `bot_ids` are in seed order (seeding already applied)."""

    tournament_id: str
    name: str
    players: int
    format: str
    bot_ids: tuple[str, ...]
    names: tuple[str, ...]
    rules: Rules
    seed: int
    clock: Clock = DEFAULT_CLOCK
    faults: Faults = DEFAULT_FAULTS
    rounds: int = 1
    series_length: int = 1
    duplicate: bool = True
    rotate_partners: bool = False
    seeding: str = "rating"
    all_triples: bool = False

    def __post_init__(self) -> None:
        n = len(self.bot_ids)
        if not self.name.strip() or len(self.name) > 200:
            raise InvalidArgument("name: must be 1 to 200 characters")
        if not self.name.isprintable():  # no newlines, escapes or other control characters
            raise InvalidArgument(f"name: {self.name!r} holds a control character")
        if self.players not in (3, 4):
            raise InvalidArgument(f"players: must be 3 or 4, got {self.players}")
        if self.format not in FORMATS:
            raise InvalidArgument(f"format: must be one of {', '.join(FORMATS)}")
        if self.seeding not in SEEDINGS:
            raise InvalidArgument(f"seeding: must be one of {', '.join(SEEDINGS)}")
        if len(set(self.bot_ids)) != n:
            raise InvalidArgument("bot_ids: a bot may appear only once")
        least = self.least_bots()
        if n < least:
            raise InvalidArgument(
                f"bot_ids: a {self.describe()} needs at least {least} bots, got {n}"
            )
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise InvalidArgument(f"rounds: must be from 1 to {MAX_ROUNDS}, got {self.rounds}")
        if self.series_length < 1 or self.series_length % 2 == 0 or self.series_length > 99:
            raise InvalidArgument(
                f"series_length: must be an odd number from 1 to 99, got {self.series_length}"
            )
        if self.format == "double_elimination" and self.players == 3:
            raise InvalidArgument(
                "format: double elimination is for 2v2 (players=4); 3-player brackets are "
                "single elimination by tables of three"
            )
        if self.rotate_partners and (self.players != 4 or self.format != "round_robin"):
            raise InvalidArgument("rotate_partners: only for a 2v2 round robin")
        if self.all_triples and (self.players != 3 or self.format != "round_robin"):
            raise InvalidArgument("all_triples: only for a 3-player round robin")
        if not 0 <= self.seed <= MAX_SEED:
            raise InvalidArgument(f"seed: must be from 0 to {MAX_SEED}")

    def least_bots(self) -> int:
        """The fewest bots this format can run with."""
        if self.players == 3:
            return 3
        return 4 if self.rotate_partners else 2

    def describe(self) -> str:
        """`3p round robin`, `2v2 single elimination`, ..."""
        pool = "3p" if self.players == 3 else "2v2"
        return f"{pool} {self.format.replace('_', ' ')}"

    @property
    def pool(self) -> str:
        """The rating pool: `3p` or `2v2`."""
        return "3p" if self.players == 3 else "2v2"

    def to_json(self) -> str:
        """The spec as stored."""
        return json.dumps({
            "tournament_id": self.tournament_id, "name": self.name, "players": self.players,
            "format": self.format, "bot_ids": list(self.bot_ids), "names": list(self.names),
            "rules": self.rules.options(), "seed": self.seed,
            "clock": [self.clock.move_time_ms, self.clock.time_bank_ms],
            "faults": [self.faults.max_strikes, self.faults.disconnect_grace_ms],
            "rounds": self.rounds, "series_length": self.series_length,
            "duplicate": self.duplicate, "rotate_partners": self.rotate_partners,
            "seeding": self.seeding, "all_triples": self.all_triples,
        }, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> TournamentSpec:
        """Inverse of `to_json`."""
        d = json.loads(text)
        return TournamentSpec(
            tournament_id=d["tournament_id"], name=d["name"], players=d["players"],
            format=d["format"], bot_ids=tuple(d["bot_ids"]), names=tuple(d["names"]),
            rules=Rules.make(d["players"], d["rules"]), seed=d["seed"],
            clock=Clock(*d["clock"]), faults=Faults(*d["faults"]), rounds=d["rounds"],
            series_length=d["series_length"], duplicate=d["duplicate"],
            rotate_partners=d["rotate_partners"], seeding=d["seeding"],
            all_triples=d["all_triples"],
        )


# ------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class Game:
    """One game of the plan: its id, duplicate set, seating and deal seed."""

    match_id: str
    unit: str
    bot_ids: tuple[str, ...]
    seed: int
    bracket_match: str = ""


@dataclass
class Plan:
    """What the tournament consists of, given the results so far."""

    games: list[Game] = field(default_factory=list)
    finished: bool = False
    remaining_estimate: int = 0  # games not in `games` yet that will probably be played
    bracket: brk.BracketState | None = None
    series: dict[str, brk.SeriesState] = field(default_factory=dict)


def _seatings3(unit_index: int, duplicate: bool) -> list[tuple[int, int, int]]:
    perms: list[tuple[int, int, int]] = list(itertools.permutations(range(3)))  # type: ignore[arg-type]
    return perms if duplicate else [perms[unit_index % 6]]


def _rr3(spec: TournamentSpec) -> list[Game]:
    bots = spec.bot_ids
    tables = design.triple_design(len(bots), spec.all_triples)
    games: list[Game] = []
    index = 0
    for rep in range(spec.rounds):
        for rnd in design.rounds_of(tables, len(bots)):
            for t, table in enumerate(rnd.tables):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                seed = _derive_seed(spec.seed, unit)
                for k, perm in enumerate(_seatings3(index, spec.duplicate)):
                    seats = tuple(bots[table[p]] for p in perm)
                    games.append(Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit, seats, seed))
                index += 1
    return games


def _pair_games(spec: TournamentSpec, unit: str, team0: tuple[str, str],
                team1: tuple[str, str], index: int, bracket_match: str = "") -> list[Game]:
    """A duplicate pair: the same deals with the teams in both seat pairs (one if not duplicate)."""
    seed = _derive_seed(spec.seed, unit)
    a = (team0[0], team1[0], team0[1], team1[1])
    b = (team1[0], team0[0], team1[1], team0[1])
    seatings = [a, b] if spec.duplicate else [a if index % 2 == 0 else b]
    return [Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit, s, seed, bracket_match)
            for k, s in enumerate(seatings)]


def _rr4(spec: TournamentSpec) -> list[Game]:
    bots = spec.bot_ids
    games: list[Game] = []
    index = 0
    for rep in range(spec.rounds):
        for rnd in design.team_pairings(len(bots), spec.rotate_partners):
            for t, g in enumerate(rnd.games):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                team0 = (bots[g.team0[0]], bots[g.team0[1]])
                team1 = (bots[g.team1[0]], bots[g.team1[1]])
                games += _pair_games(spec, unit, team0, team1, index)
                index += 1
    return games


def _kind(spec: TournamentSpec) -> str:
    if spec.players == 3:
        return "tables"
    return "single" if spec.format == "single_elimination" else "double"


def _bracket_plan(spec: TournamentSpec, results: Mapping[str, dict[str, Any]]) -> Plan:
    bracket = brk.build(_kind(spec), spec.bot_ids)
    seeds = {b: i for i, b in enumerate(spec.bot_ids)}
    out = Plan()
    outcomes: dict[str, tuple[str, ...]] = {}
    # Resolve round by round: each pass may make more matches ready.
    while True:
        state = brk.resolve(bracket, outcomes)
        progressed = False
        for ms in state.ready():
            mid = ms.match.id
            if mid in outcomes:
                continue
            games, ranking, series = _bracket_match(spec, mid, ms.participants, results, seeds)
            out.games += [g for g in games if g.match_id not in {x.match_id for x in out.games}]
            if series is not None:
                out.series[mid] = series
            if ranking is not None:
                outcomes[mid] = ranking
                progressed = True
        if not progressed:
            break
    state = brk.resolve(bracket, outcomes)
    out.bracket = state
    out.finished = state.finished
    out.remaining_estimate = _fewest_games_to_come(spec, state, out)
    return out


def _fewest_games_to_come(spec: TournamentSpec, state: brk.BracketState, out: Plan) -> int:
    """Games not planned yet that the bracket needs at the least, for progress bars.

    A 3p table plays all its sets, so a planned table needs nothing more; a 2v2 series
    being played needs the pairs that its leader still lacks, beyond any pair under way.
    """
    if spec.players == 3:
        per_match = (6 if spec.duplicate else 1) * spec.series_length
        per_pair = 0
    else:
        per_pair = 2 if spec.duplicate else 1
        per_match = per_pair * (spec.series_length // 2 + 1)
    planned: dict[str, int] = {}
    for g in out.games:
        if g.bracket_match:
            planned[g.bracket_match] = planned.get(g.bracket_match, 0) + 1
    certain = state.bracket.certain_matches()
    fewest = 0
    for m in state.matches:
        if not (m.status is brk.Status.READY
                or (m.status is brk.Status.PENDING and m.match.id in certain)):
            continue
        series = out.series.get(m.match.id)
        if m.match.id not in planned:
            fewest += per_match
        elif series is not None and not series.decided:
            under_way = -(-planned[m.match.id] // per_pair) - series.pairs_played
            lacking = series.best_of // 2 + 1 - max(series.wins) - under_way
            fewest += per_pair * max(0, lacking)
    return fewest


def _bracket_match(
    spec: TournamentSpec, mid: str, who: tuple[str, ...],
    results: Mapping[str, dict[str, Any]], seeds: Mapping[str, int],
) -> tuple[list[Game], tuple[str, ...] | None, brk.SeriesState | None]:
    """Games of one ready bracket match so far, and its ranking once decided."""
    if spec.players == 3:
        # A table plays `series_length` duplicate sets; all its games rank it together.
        games: list[Game] = []
        for s in range(spec.series_length):
            unit = f"{mid}-s{s + 1}"
            seed = _derive_seed(spec.seed, unit)
            for k, perm in enumerate(_seatings3(seeds[who[0]] + s, spec.duplicate)):
                seats = tuple(who[p] for p in perm)
                games.append(Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit, seats, seed, mid))
        done = [results[g.match_id] for g in games if g.match_id in results]
        if len(done) < len(games):
            return games, None, None
        return games, rank_group(done, seeds), None
    a, b = who
    games = []
    winners: list[str] = []
    pair = 0
    while True:
        state = brk.series_state(a, b, winners, spec.series_length)
        if state.decided:
            assert state.winner is not None
            loser = b if state.winner == a else a
            return games, (state.winner, loser), state
        pair += 1
        unit = f"{mid}-p{pair}"
        pair_games = _pair_games(spec, unit, (a, a), (b, b), pair - 1, mid)
        games += pair_games
        done = [results[g.match_id] for g in pair_games if g.match_id in results]
        if len(done) < len(pair_games):
            return games, None, state
        winners.append(rank_group(done, seeds)[0])


def plan(spec: TournamentSpec, results: Mapping[str, dict[str, Any]]) -> Plan:
    """Every game the tournament has or needs now, given finished results by match id."""
    if spec.format == "round_robin":
        games = _rr3(spec) if spec.players == 3 else _rr4(spec)
        return Plan(games=games, finished=all(g.match_id in results for g in games))
    return _bracket_plan(spec, results)


# ------------------------------------------------------------------ store


def load_spec(r: redis.Redis, tournament_id: str) -> TournamentSpec:
    """The stored spec, or NotFound."""
    raw = r.hget(keys.tournament(tournament_id), "spec")
    if raw is None:
        raise NotFound(f"no tournament with id {tournament_id!r}")
    return TournamentSpec.from_json(str(raw))


def build_spec(
    r: redis.Redis, *, name: str, players: int, format: str, bot_ids: Sequence[str],
    rules: Mapping[str, str], clock: Clock, faults: Faults, rounds: int, series_length: int,
    seed: int | None, duplicate: bool, rotate_partners: bool, seeding: str, all_triples: bool,
) -> TournamentSpec:
    """Validate a request into a spec (bots resolved, seeds ordered); errors name the field."""
    from workers.ratings import ratings_for

    if players not in (3, 4):
        raise InvalidArgument(f"players: must be 3 or 4, got {players}")
    records = []
    for i, b in enumerate(bot_ids):
        try:
            records.append(store.find_bot(r, b))
        except NotFound:
            raise InvalidArgument(f"bot_ids[{i}]: no bot with id or name {b!r}") from None
    try:
        parsed = Rules.make(players, dict(rules))
    except MoonError as exc:
        raise InvalidArgument(f"rules: {exc}") from None
    ids = [rec.bot_id for rec in records]
    if seeding == "rating" and ids:
        ratings = ratings_for(r, "3p" if players == 3 else "2v2")
        ids = list(brk.seed_order(ids, {b: x.rating for b, x in ratings.items()}))
    names = {rec.bot_id: rec.name for rec in records}
    return TournamentSpec(
        tournament_id="t-" + secrets.token_hex(5), name=name, players=players, format=format,
        bot_ids=tuple(ids), names=tuple(names[b] for b in ids), rules=parsed,
        seed=secrets.randbits(63) if seed is None else seed, clock=clock, faults=faults,
        rounds=rounds, series_length=series_length, duplicate=duplicate,
        rotate_partners=rotate_partners, seeding=seeding, all_triples=all_triples,
    )


def create_tournament(r: redis.Redis, rq_conn: redis.Redis, spec: TournamentSpec) -> None:
    """Store a new tournament and queue its first scheduling step."""
    from workers.queues import enqueue_advance

    key = keys.tournament(spec.tournament_id)
    if not r.hsetnx(key, "spec", spec.to_json()):
        raise FailedPrecondition(f"tournament {spec.tournament_id} exists already")
    now = time.time()
    pipe = r.pipeline()
    pipe.hset(key, mapping={"status": "running", "created_at": repr(now), "name": spec.name})
    pipe.zadd(keys.TOURNAMENTS, {spec.tournament_id: now})
    pipe.execute()
    enqueue_advance(rq_conn, spec.tournament_id)


def tournament_results(r: redis.Redis, tournament_id: str) -> dict[str, dict[str, Any]]:
    """Finished results of a tournament's games, by match id, as standings rows."""
    ids: list[str] = r.zrange(keys.tournament_matches(tournament_id), 0, -1)  # type: ignore[assignment]
    return read_rows(r, ids)


# --------------------------------------------------------------- advance


def _failed_matches(r: redis.Redis, match_ids: set[str]) -> list[tuple[str, str]]:
    """Matches among these that were marked failed (recovery gave up on them), with errors."""
    ids = sorted(match_ids)
    pipe = r.pipeline(transaction=False)
    for mid in ids:
        pipe.hmget(keys.match(mid), "status", "error")
    return [(mid, str(err)) for mid, (status, err) in zip(ids, pipe.execute(), strict=True)
            if status == "failed"]


def standings_rows(spec: TournamentSpec, results: Mapping[str, Mapping[str, Any]]
                   ) -> list[dict[str, Any]]:
    """Standings as plain rows (every bot of the tournament, played or not)."""
    rows = {s.bot_id: s for s in standings(results.values())}
    names = dict(zip(spec.bot_ids, spec.names, strict=True))
    forfeits: dict[str, int] = {}
    for res in results.values():
        f = res.get("forfeit")
        if f:
            bot = res["bot_ids"][int(f["seat"])]
            forfeits[bot] = forfeits.get(bot, 0) + 1
    order = [s.bot_id for s in standings(results.values())]
    order += [b for b in spec.bot_ids if b not in rows]
    out = []
    for rank, bot in enumerate(order, 1):
        s = rows.get(bot)
        out.append({
            "rank": rank, "bot_id": bot, "name": names.get(bot, bot),
            "games": s.games if s else 0, "wins": s.wins if s else 0,
            "draws": s.draws if s else 0, "losses": s.losses if s else 0,
            "points": s.score if s else 0.0, "score": s.points if s else 0,
            "forfeits": forfeits.get(bot, 0),
        })
    return out


def advance(r: redis.Redis, rq_conn: redis.Redis, tournament_id: str) -> dict[str, Any]:
    """One scheduling step (idempotent): create what the plan adds, emit events, finish."""
    from workers.queues import enqueue_match

    lock = keys.tournament_lock(tournament_id)
    r.set(keys.tournament_dirty(tournament_id), 1)
    token = secrets.token_hex(8)
    if not r.set(lock, token, nx=True, px=_LOCK_MS):
        return {"tournament_id": tournament_id, "skipped": "another run is advancing it"}
    summary: dict[str, Any] = {}
    try:
        while r.delete(keys.tournament_dirty(tournament_id)):
            summary = _advance_once(r, rq_conn, tournament_id, enqueue_match)
            r.set(lock, token, xx=True, px=_LOCK_MS)
    finally:
        if r.get(lock) == token:
            r.delete(lock)
    return summary


def _advance_once(r: redis.Redis, rq_conn: redis.Redis, tid: str, enqueue: Any
                  ) -> dict[str, Any]:
    spec = load_spec(r, tid)
    status = r.hget(keys.tournament(tid), "status")
    results = tournament_results(r, tid)
    p = plan(spec, results)
    known: set[str] = set(r.zrange(keys.tournament_matches(tid), 0, -1))  # type: ignore[arg-type]
    names = dict(zip(spec.bot_ids, spec.names, strict=True))
    created = 0
    for i, g in enumerate(p.games):
        if g.match_id in known:
            continue
        mspec = MatchSpec(
            match_id=g.match_id, rules=spec.rules, seed=g.seed, bot_ids=g.bot_ids,
            seat_names=tuple(names[b] for b in g.bot_ids), clock=spec.clock,
            faults=spec.faults, tournament_id=tid,
            meta={"unit": g.unit, "bracket_match": g.bracket_match},
        )
        store.create_match(r, mspec)
        r.zadd(keys.tournament_matches(tid), {g.match_id: len(known) + i})
        enqueue(rq_conn, g.match_id)
        created += 1
    total = len(p.games) + p.remaining_estimate
    done = len(results)
    r.hset(keys.tournament(tid), mapping={"total": total, "done": done})
    fresh = 0
    emitted = r.smembers(keys.tournament_emitted(tid))
    for mid in sorted(results):
        if f"finished:{mid}" in emitted:
            continue  # emit() would skip it too; this saves a round trip per old result
        res = results[mid]
        fresh += events.emit(r, tid, f"finished:{mid}", {
            "type": "match_finished", "match_id": mid, "result": {
                k: res[k] for k in ("final", "winner", "placement", "end", "forfeit", "seats")
            }, "done": done, "total": total,
        }) > 0
    if fresh:
        events.emit(r, tid, f"standings:{done}", {
            "type": "standings_changed", "done": done, "total": total,
        })
    failed = _failed_matches(r, known - set(results))
    if failed and status == "running":
        mid, error = failed[0]
        r.hset(keys.tournament(tid), mapping={
            "status": "failed", "finished_at": repr(time.time()),
            "error": f"match {mid} cannot be played: {error}"})
        events.emit(r, tid, "finished", {"type": "tournament_finished", "done": done})
        log.error("tournament %s failed: match %s: %s", tid, mid, error)
    elif p.finished and status == "running" and done >= len(p.games):
        r.hset(keys.tournament(tid), mapping={"status": "finished",
                                              "finished_at": repr(time.time())})
        events.emit(r, tid, "finished", {"type": "tournament_finished", "done": done})
        log.info("tournament %s finished", tid)
    return {"tournament_id": tid, "created": created, "done": done, "total": total,
            "finished": p.finished}
