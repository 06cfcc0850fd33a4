"""The arena's matchmaking step (tournaments.arena): tables, boards, rates, placement,
table-mates, the information it maximises, and bad input."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

import ratings
from store.errors import FailedPrecondition, InvalidArgument
from tournaments import arena
from tournaments.arena import Candidate, Covariance, Request, Settings, Step, step
from tournaments.arena_search import Scorer, fisher3, gain3, reduction3, search


def _bots(n: int, **fields: object) -> tuple[Candidate, ...]:
    rng = np.random.default_rng(n)
    return tuple(Candidate(f"b{i:03d}", rating=float(rng.normal(0, 200)), sd=60.0, games=50,
                           free_since=float(i), **fields)  # type: ignore[arg-type]
                 for i in range(n))


def _request(bots: tuple[Candidate, ...], pool: str = "3p", **fields: object) -> Request:
    base = Request(pool=pool, arena="a-1", next_board=0, now=100.0, online=len(bots),
                   bots=bots, seed=3, settings=Settings(batch=0.0))
    return replace(base, **fields)  # type: ignore[arg-type]


def _tables(result: Step) -> list[tuple[str, ...]]:
    return [t.seats for b in result.boards for t in b.tables]


class Driver:
    """Plays steps with every game ending before the next step: a whole pool in rounds."""

    def __init__(self, n: int, pool: str = "3p", settings: Settings | None = None,
                 ratings_elo: list[float] | None = None) -> None:
        self.pool, self.k = pool, arena.POOLS[pool]
        self.settings = settings or Settings(batch=0.0, avoid=2)
        self.ids = [f"b{i:03d}" for i in range(n)]
        self.rating = dict(zip(self.ids, ratings_elo or [0.0] * n, strict=True))
        self.games = Counter[str]()
        self.recent: dict[str, list[str]] = {b: [] for b in self.ids}
        self.seats = {b: [0] * self.k for b in self.ids}
        self.dealt: dict[str, set[str]] = {b: set() for b in self.ids}
        self.free_since = dict.fromkeys(self.ids, 0.0)
        self.next_board, self.now = 0, 0.0
        self.history: list[tuple[str, ...]] = []

    def candidates(self, ids: list[str]) -> tuple[Candidate, ...]:
        return tuple(Candidate(b, rating=self.rating[b], sd=80.0, games=self.games[b],
                               free_since=self.free_since[b], recent=tuple(self.recent[b]),
                               seats=tuple(self.seats[b]), dealt=frozenset(self.dealt[b]))
                     for b in ids)

    def play(self, ids: list[str] | None = None, seed: int = 0) -> Step:
        self.now += 1.0
        bots = self.candidates(ids if ids is not None else self.ids)
        result = step(Request(self.pool, "a-1", self.next_board, self.now, len(self.ids), bots,
                              seed=seed, settings=self.settings))
        for board in result.boards:
            for table in board.tables:
                for s, b in enumerate(table.seats):
                    assert board.board_id not in self.dealt[b]
                    self.dealt[b].add(board.board_id)
                    self.games[b] += 1
                    self.seats[b][s] += 1
                    # The partner first in 2v2 (Candidate.recent); the newest 8 games.
                    mates = [table.seats[(s + d) % self.k] for d in
                             ((2, 1, 3) if self.k == 4 else (1, 2))]
                    self.recent[b] = (mates + self.recent[b])[: 8 * (self.k - 1)]
                    self.free_since[b] = self.now
                self.history.append(table.seats)
        self.next_board = result.next_board
        return result


# --- what every step gives ---------------------------------------------------------------


@pytest.mark.parametrize("pool", ["3p", "2v2"])
@pytest.mark.parametrize("n", [6, 8, 9, 10, 17, 40, 101])
def test_each_bot_sits_at_one_table_and_every_board_has_two_tables(pool: str, n: int) -> None:
    k = arena.POOLS[pool]
    if n < 2 * k:
        return
    result = step(_request(_bots(n), pool))
    tables = _tables(result)
    seated = [b for t in tables for b in t]
    assert len(tables) == n // k
    assert all(len(t) == k for t in tables)
    assert len(seated) == len(set(seated))  # distinct within a table and across tables
    assert set(seated) | set(result.waiting) == {c.bot_id for c in _bots(n)}
    assert not set(seated) & set(result.waiting)
    assert all(len(b.tables) >= 2 for b in result.boards)
    assert [b.board_id for b in result.boards] == [f"a-1/b{i}" for i in range(len(result.boards))]
    assert result.next_board == len(result.boards)
    assert result.reason == "" and result.retry_at is None


@pytest.mark.parametrize("max_tables", [3, 4, 5, 7, 64])
def test_boards_hold_two_to_max_tables(max_tables: int) -> None:
    for tables in range(2, 60):
        bots = _bots(3 * tables)
        result = step(_request(bots, settings=Settings(batch=0.0, max_tables=max_tables,
                                                       rounds=1)))
        sizes = [len(b.tables) for b in result.boards]
        assert sum(sizes) == tables
        assert min(sizes) >= 2 and max(sizes) <= max_tables, (tables, sizes)
        assert len(sizes) == math.ceil(tables / max_tables)


@pytest.mark.parametrize("pool", ["3p", "2v2"])
def test_a_groups_bots_are_dealt_to_boards_of_their_own_and_no_board_is_smaller(
        pool: str) -> None:
    # Six tables on boards of at most three: two boards a pass. Two groups of two bots
    # (one author's, one declared) at different tables are put on different boards, as
    # many tables a board as with no group at all: nothing is left to deal apart after,
    # and nothing a watcher counts changes. (Dealt in turn, a pair of tables shares a
    # board two times in five.)
    k = arena.POOLS[pool]
    plain = _bots(6 * k)
    groups = {0: "author:alice", 1: "author:alice", 2: "stack:lab", 3: "stack:lab"}
    bots = tuple(replace(b, groups=frozenset({groups[i]}) if i in groups else frozenset())
                 for i, b in enumerate(plain))
    settings = Settings(batch=0.0, max_tables=3)
    for seed in range(30):
        result = step(_request(bots, pool=pool, seed=seed, settings=settings))
        sizes = [len(b.tables) for b in result.boards]
        assert sizes == [len(b.tables) for b in step(_request(
            plain, pool=pool, seed=seed, settings=settings)).boards] == [3, 3]
        for board in result.boards:
            for g in set(groups.values()):
                members = {plain[i].bot_id for i, x in groups.items() if x == g}
                at = [t for t in board.tables if members & set(t.seats)]
                assert len(at) <= 1, (seed, board.board_id, g, at)


def test_the_step_is_a_function_of_the_request_and_seed() -> None:
    bots = _bots(60)
    req = _request(bots)
    first = step(req)
    assert step(req) == first
    assert step(replace(req, bots=tuple(reversed(bots)))) == first  # input order is irrelevant
    others = {tuple(_tables(step(replace(req, seed=s)))) for s in range(6)}
    assert len(others) > 1  # the seed matters (ties and the search's random start)


# --- boards --------------------------------------------------------------------------------


def test_no_bot_is_dealt_a_board_twice_over_many_steps() -> None:
    d = Driver(20)
    for i in range(60):
        d.play(seed=i)  # Driver.play asserts each bot's new board is not in its record
    boards = Counter(b for dealt in d.dealt.values() for b in dealt)
    assert len(boards) == d.next_board
    assert all(len(dealt) == d.games[b] for b, dealt in d.dealt.items())


def test_a_board_number_dealt_before_is_refused() -> None:
    bots = _bots(12)
    seen = replace(bots[4], dealt=frozenset({"a-1/b7"}))
    req = _request((*bots[:4], seen, *bots[5:]), next_board=7)
    with pytest.raises(FailedPrecondition, match=r"board a-1/b7 was dealt to bot b004 before"):
        step(req)
    assert _tables(step(replace(req, next_board=8)))  # the next number is fine


# --- rates, placement, waiting -------------------------------------------------------------


def test_game_counts_stay_within_one_of_each_other_when_all_are_free() -> None:
    d = Driver(20)  # 6 tables of 3 and 2 bots left over every step
    for i in range(90):
        d.play(seed=i)
        counts = [d.games[b] for b in d.ids]
        assert max(counts) - min(counts) <= 1, counts


def test_a_new_bot_is_seated_before_established_ones() -> None:
    established = _bots(13)  # free for longer than the new bot
    new = Candidate("new", games=0, free_since=500.0)
    for seed in range(10):
        result = step(_request((*established, new), seed=seed))
        assert "new" not in result.waiting
        assert len(result.waiting) == 2


def test_an_idle_bot_is_seated_before_one_playing_a_game() -> None:
    busy = tuple(replace(c, in_progress=1, free_since=0.0) for c in _bots(12))
    idle = (Candidate("idle-1", games=80, free_since=90.0),
            Candidate("idle-2", games=80, free_since=95.0))
    result = step(_request((*busy, *idle)))
    seated = {b for t in _tables(result) for b in t}
    assert {"idle-1", "idle-2"} <= seated


def test_the_longest_waiting_bots_are_seated_first() -> None:
    bots = _bots(14)  # free_since 0..13: b012 and b013 came last
    assert set(step(_request(bots)).waiting) == {"b012", "b013"}


def test_a_bot_is_placed_in_its_first_steps() -> None:
    d = Driver(31)
    for i in range(5):
        d.play(seed=i)
    newcomer = "b030"
    d.games[newcomer] = 0
    for i in range(10):
        ids = d.ids if i else [*d.ids[:29], newcomer]  # it joins with 29 others free
        result = d.play(ids, seed=100 + i)
        assert newcomer not in result.waiting
    assert d.games[newcomer] == 10


def test_too_few_free_bots_wait_and_the_batch_holds_until_full_or_late() -> None:
    bots = _bots(5)
    result = step(_request(bots, online=20))
    assert not result.boards and result.retry_at is None
    assert "5 bots are free; a board needs two tables (6 bots)" in result.reason
    # 8 of 40 online are free: under a quarter, so the step holds until the oldest has
    # waited max_wait_s (it became free at 0.0).
    eight = _bots(8)
    held = step(_request(eight, online=40, now=3.0,
                         settings=Settings(batch=0.25, max_wait_s=5.0)))
    assert not held.boards and held.retry_at == 5.0
    assert held.waiting[0] == "b000"
    late = step(_request(eight, online=40, now=5.0,
                         settings=Settings(batch=0.25, max_wait_s=5.0)))
    assert len(_tables(late)) == 2
    full = step(_request(_bots(10), online=40, now=3.0,
                         settings=Settings(batch=0.25, max_wait_s=5.0)))
    assert len(_tables(full)) == 3


# --- table-mates and seats -----------------------------------------------------------------


@pytest.mark.parametrize("pool", ["3p", "2v2"])
def test_recent_table_mates_are_kept_apart_where_the_pool_allows(pool: str) -> None:
    k = arena.POOLS[pool]
    d = Driver(30 if k == 3 else 32, pool, Settings(batch=0.0, avoid=3))
    for i in range(40):
        before = {b: list(r[: 3 * (k - 1)]) for b, r in d.recent.items()}
        result = d.play(seed=i)
        for seats in _tables(result):
            for a, b in itertools.combinations(seats, 2):
                assert b not in before[a] and a not in before[b], (i, seats)


def test_repeats_are_fewest_possible_in_a_pool_of_six() -> None:
    # Six bots: every split into two tables repeats a pair of the last one. The step still
    # deals, with as few repeats as the pool allows (one pair per table at best).
    d = Driver(6, settings=Settings(batch=0.0, avoid=1))
    for i in range(20):
        before = {b: set(r[:2]) for b, r in d.recent.items()}
        result = d.play(seed=i)
        assert len(_tables(result)) == 2
        repeats = sum(b in before[a] for t in _tables(result)
                      for a, b in itertools.combinations(t, 2))
        assert repeats <= 2 or i == 0


def test_pairs_spread_over_the_pool() -> None:
    d = Driver(30, settings=Settings(batch=0.0, avoid=2))
    for i in range(60):
        d.play(seed=i)
    pairs = Counter(frozenset(p) for t in d.history for p in itertools.combinations(t, 2))
    # 600 tables, 1,800 pairs among 435: random seating would meet some pair about 11 times.
    assert max(pairs.values()) <= 9
    assert len(pairs) >= 400


def test_seats_go_to_the_bots_that_held_them_least() -> None:
    bots = tuple(replace(c, seats=(9, 9, 0) if i % 3 == 0 else (9, 0, 9) if i % 3 == 1
                         else (0, 9, 9)) for i, c in enumerate(_bots(30)))
    wanted = {c.bot_id: c.seats.index(0) for c in bots}
    for seed in range(5):
        for seats in _tables(step(_request(bots, seed=seed))):
            for s, b in enumerate(seats):
                if s != wanted[b]:
                    # Only when its table holds two bots that want one seat.
                    assert sorted(wanted[x] for x in seats) != [0, 1, 2]


def test_seat_positions_even_out_over_time() -> None:
    d = Driver(21)
    for i in range(60):
        d.play(seed=i)
    for counts in d.seats.values():
        assert max(counts) - min(counts) <= 2, counts


def test_2v2_partners_rotate() -> None:
    d = Driver(16, "2v2", Settings(batch=0.0, avoid=1))
    partners = Counter[frozenset[str]]()
    for i in range(30):
        before = {b: set(r[::3]) for b, r in d.recent.items()}  # partners of the last 8 games
        for seats in _tables(d.play(seed=i)):
            assert len(set(seats)) == 4
            for a, b in ((seats[0], seats[2]), (seats[1], seats[3])):
                partners[frozenset((a, b))] += 1
                assert b not in before[a]
    # None of a bot's last 8 partners again: a pair partners at most once in 9 of its 30 games.
    assert max(partners.values()) <= math.ceil(30 / 9)


# --- the information it maximises ----------------------------------------------------------


def _numeric_fisher(mu: np.ndarray) -> np.ndarray:
    """E[-Hessian of log P(order)] of a 3p Plackett-Luce game, by finite differences."""
    def logp(u: np.ndarray, order: tuple[int, ...]) -> float:
        rest, total = list(order), 0.0
        for _ in range(2):
            total += u[rest[0]] - math.log(float(np.exp(u[rest]).sum()))
            rest = rest[1:]
        return total

    h, out = 1e-4, np.zeros((3, 3))
    for order in itertools.permutations(range(3)):
        p = math.exp(logp(mu, order))
        for i, j in itertools.product(range(3), repeat=2):
            ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
            second = (logp(mu + ei + ej, order) - logp(mu + ei - ej, order)
                      - logp(mu - ei + ej, order) + logp(mu - ei - ej, order)) / (4 * h * h)
            out[i, j] -= p * second
    return out


def test_the_fisher_information_of_a_3p_game() -> None:
    rng = np.random.default_rng(1)
    mu = rng.normal(0.0, 1.0, (5, 3))
    got = fisher3(mu)
    for row in range(5):
        assert np.allclose(got[row], _numeric_fisher(mu[row]), atol=1e-6)
    equal = fisher3(np.zeros((1, 3)))[0]
    assert equal[0, 0] == pytest.approx(7 / 18)  # as ratings.batch's doc says


def test_the_gain_is_half_the_log_determinant() -> None:
    rng = np.random.default_rng(2)
    m = 40
    mu = rng.normal(0.0, 1.0, (m, 3))
    a = rng.normal(size=(m, 3, 3))
    sigma = a @ a.transpose(0, 2, 1) * 0.5
    want = 0.5 * np.log(np.linalg.det(np.eye(3)[None] + sigma @ fisher3(mu)))
    var = np.stack([sigma[:, i, i] for i in range(3)], axis=1)
    cov = {(i, j): sigma[:, i, j] for i, j in itertools.combinations(range(3), 2)}
    assert np.allclose(gain3(mu, var, cov), want)


def test_the_2v2_gain_is_half_the_log_determinant() -> None:
    rng = np.random.default_rng(3)
    mu = rng.normal(0.0, 1.0, 4)
    a = rng.normal(size=(4, 4))
    sigma = a @ a.T
    scorer = Scorer(4, "information", mu, np.diag(sigma).copy(), np.zeros((4, 4), bool),
                    matrix=sigma, row=np.arange(4))
    w = np.array([0.5, 0.5, -0.5, -0.5])
    p = 1.0 / (1.0 + math.exp(-float(w @ mu)))
    info = p * (1 - p) * np.outer(w, w)
    want = 0.5 * math.log(float(np.linalg.det(np.eye(4) + sigma @ info)))
    assert scorer.information(np.array([[0, 1, 2, 3]]))[0] == pytest.approx(want)


def test_the_variance_fall_is_the_trace_of_the_posterior_update() -> None:
    rng = np.random.default_rng(5)
    m = 40
    mu = rng.normal(0.0, 1.0, (m, 3))
    a = rng.normal(size=(m, 3, 3))
    sigma = a @ a.transpose(0, 2, 1) * 0.5
    info = fisher3(mu)
    after = sigma - sigma @ info @ np.linalg.inv(np.eye(3)[None] + sigma @ info) @ sigma
    want = np.trace(sigma, axis1=1, axis2=2) - np.trace(after, axis1=1, axis2=2)
    var = np.stack([sigma[:, i, i] for i in range(3)], axis=1)
    cov = {(i, j): sigma[:, i, j] for i, j in itertools.combinations(range(3), 2)}
    assert np.allclose(reduction3(mu, var, cov), want)
    # 2v2: Sherman-Morrison on the team difference.
    mu4 = rng.normal(0.0, 1.0, 4)
    b = rng.normal(size=(4, 4))
    s4 = b @ b.T
    scorer = Scorer(4, "variance", mu4, np.diag(s4).copy(), np.zeros((4, 4), bool),
                    matrix=s4, row=np.arange(4))
    w = np.array([0.5, 0.5, -0.5, -0.5])
    p = 1.0 / (1.0 + math.exp(-float(w @ mu4)))
    j4 = p * (1 - p) * np.outer(w, w)
    after4 = s4 - s4 @ j4 @ np.linalg.inv(np.eye(4) + s4 @ j4) @ s4
    assert scorer.reduction(np.array([[0, 1, 2, 3]]))[0] == pytest.approx(
        float(np.trace(s4) - np.trace(after4)))


@pytest.mark.parametrize("objective", ["variance", "information"])
def test_the_search_beats_a_random_grouping_on_its_objective(objective: str) -> None:
    rng = np.random.default_rng(4)
    s = 300
    scorer = Scorer(3, objective, rng.normal(0.0, 1.2, s), rng.uniform(0.01, 2.0, s),
                    np.zeros((s, s), bool))
    tables, value, _ = search(scorer, s, np.random.default_rng(0), 20)
    random_tables = np.random.default_rng(1).permutation(s).reshape(-1, 3)
    assert sorted(tables.ravel().tolist()) == list(range(s))
    assert value.sum() > 1.2 * scorer.values(random_tables)[0].sum()


def test_two_bots_whose_difference_is_known_are_seated_apart() -> None:
    # b000 and b001 are tied by a covariance close to their variances: their difference is
    # known, so a game between them teaches little; the others are unknown to each other.
    bots = tuple(replace(c, rating=0.0, sd=100.0, recent=()) for c in _bots(6))
    cov = np.eye(6) * 100.0**2
    cov[0, 1] = cov[1, 0] = 0.99 * 100.0**2
    req = _request(bots, covariance=Covariance(tuple(c.bot_id for c in bots), cov))
    for seats in _tables(step(req)):
        assert not {"b000", "b001"} <= set(seats)
    together = step(replace(req, covariance=None))  # without it, any split is as good
    assert len(_tables(together)) == 2


def test_uncertain_bots_meet_bots_near_their_rating() -> None:
    # Established bots of ratings -600..600; a new bot at 0 +- 400 gains most from a table
    # near its rating, so it does not sit with the two extremes.
    ratings_elo = np.linspace(-600.0, 600.0, 8)
    bots = [Candidate(f"b{i}", rating=float(r), sd=30.0, games=100, free_since=0.0)
            for i, r in enumerate(ratings_elo)]
    bots.append(Candidate("new", games=0, free_since=0.0))
    result = step(_request(tuple(bots)))
    table = next(t for t in _tables(result) if "new" in t)
    mates = [float(ratings_elo[int(b[1:])]) for b in table if b != "new"]
    assert max(abs(x) for x in mates) < 600.0
    falls = {t.seats: t.variance_fall for b in result.boards for t in b.tables}
    assert falls[table] == max(falls.values())


def test_the_module_agrees_with_the_rating_scale_and_prior() -> None:
    assert arena.ELO_PER_NAT == ratings.ELO_PER_NAT
    assert arena.PRIOR_SD == ratings.PRIOR_SD


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "message"), [
    ({"settings": Settings(concurrency=0)}, "concurrency: must be at least 1"),
    ({"pool": "5p"}, "pool: must be one of 3p, 2v2"),
    ({"settings": Settings(batch=1.5)}, "batch: must be a share"),
    ({"settings": Settings(max_tables=2)}, "max_tables: must be at least 3"),
    ({"settings": Settings(max_wait_s=-1.0)}, "max_wait_s"),
    ({"settings": Settings(objective="best")}, "objective: must be one of"),
    ({"next_board": -1}, "next_board: must not be negative"),
    ({"arena": ""}, "arena: must name the arena"),
    ({"online": 5}, "online: 5 bots online but 12 free"),
    ({"now": math.nan}, "now: must be a time"),
])
def test_bad_requests_are_refused_with_a_clear_error(change: dict[str, object],
                                                     message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        step(_request(_bots(12), **change))


@pytest.mark.parametrize(("bot", "message"), [
    (Candidate("x", rating=math.nan), "bot 'x': rating and sd must be finite"),
    (Candidate("x", sd=0.0), "bot 'x': rating and sd must be finite and sd > 0"),
    (Candidate("x", games=-1), "bot 'x': games and in_progress must not be negative"),
    (Candidate("x", in_progress=2), "bot 'x': plays 2 games of 2 allowed at once"),
    (Candidate("x", seats=(1, 2)), "bot 'x': seats must count games at each of the 3 seats"),
    (Candidate(""), "a bot id must be a non-empty string"),
    (Candidate("b000"), "bots: 'b000' is listed twice"),
])
def test_bad_bots_are_refused_naming_the_bot(bot: Candidate, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        step(_request((*_bots(12), bot)))


def test_a_covariance_that_does_not_fit_is_refused() -> None:
    bots = _bots(12)
    ids = tuple(c.bot_id for c in bots)
    with pytest.raises(InvalidArgument, match="covariance: must be a finite 12 x 12 matrix"):
        step(_request(bots, covariance=Covariance(ids, np.eye(11))))
    with pytest.raises(InvalidArgument, match="covariance: names a bot twice"):
        step(_request(bots, covariance=Covariance(ids[:11] + ids[:1], np.eye(12))))


@pytest.mark.parametrize(("pool", "online"), [("3p", 5), ("2v2", 7), ("3p", 1)])
def test_too_few_bots_online_is_a_clear_error(pool: str, online: int) -> None:
    bots = _bots(online)
    need = arena.least_online(pool)
    verb = "is" if online == 1 else "are"
    with pytest.raises(FailedPrecondition,
                       match=f"needs at least {need} bots online to deal a board to two "
                             f"tables; {online} {verb} online$"):
        step(_request(bots, pool, online=online))


def test_2v2_teams_are_split_evenly() -> None:
    # Two strong, two weak and four middling bots, all uncertain alike: the result is most
    # uncertain, so teaches most, when the two teams of each table are even.
    rating = {"s0": 400.0, "s1": 400.0, "w0": -400.0, "w1": -400.0,
              "m0": -10.0, "m1": 0.0, "m2": 5.0, "m3": 10.0}
    bots = tuple(Candidate(b, rating=r, sd=100.0, games=50) for b, r in rating.items())
    settings = Settings(batch=0.0, objective="variance")  # 2v2's default groups at random
    for seed in range(5):
        for seats in _tables(step(_request(bots, "2v2", seed=seed, settings=settings))):
            gap = rating[seats[0]] + rating[seats[2]] - rating[seats[1]] - rating[seats[3]]
            assert abs(gap) <= 20.0, seats


def test_each_pool_has_its_default_objective() -> None:
    assert arena.POOL_OBJECTIVE == {"3p": "variance", "2v2": "random"}
    bots = _bots(24)
    for pool in ("3p", "2v2"):
        default = step(_request(bots, pool))
        chosen = step(_request(bots, pool, settings=Settings(
            batch=0.0, objective=arena.POOL_OBJECTIVE[pool])))
        assert default == chosen
    assert step(_request(bots, "2v2")) != step(_request(bots, "2v2", settings=Settings(
        batch=0.0, objective="variance")))
