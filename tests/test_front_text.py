"""What the command line prints and how it reads flags, as pure functions: standings that
say which rating is which, no `-0`, plurals, LOS explained, tournaments listed, boards
named, a progress rate counted from when following began, typos answered with the
nearest flag, a bot module without the class named, and seeding by rating only where
the order is a draw."""

from __future__ import annotations

import io

import pytest

from clients.builtin import load_bot
from clients.cli import build_parser
from clients.parser import UsageError
from clients.progress import Progress
from clients.render import (
    elo,
    interval_text,
    plural,
    ranking_text,
    ratings_table,
    rounds_text,
    standings_table,
    tournament_list,
)
from proto.moon.v1 import rating_pb2, tournament_pb2
from store.records import Clock, Faults
from tournaments.plan import board_label
from tournaments.spec import make_spec


def _standings(own: bool) -> tournament_pb2.Standings:
    st = tournament_pb2.Standings(tournament_id="t-1")
    for rank, (name, rating) in enumerate([("alpha", 12.6), ("beta", -0.4)], 1):
        row = st.rows.add(rank=rank, bot_id=f"b-{rank}", name=name, games=1, rating=rating)
        if own:
            row.tournament_rating = -rating
    return st


def test_standings_say_which_rating_is_which_and_never_minus_zero() -> None:
    text = standings_table(_standings(own=True), "final", "3p")
    head = text.splitlines()[1].split()
    assert head[-3:] == ["pool", "event", "ff"]
    assert "pool: each bot's rating in the 3p pool now" in text
    assert "event: its rating over this tournament's games alone" in text
    assert "-0" not in text.replace("-0.4", "")  # -0.4 rounds to 0, shown as 0
    row = text.splitlines()[3].split()
    assert row[1] == "beta" and row[-3:] == ["0", "0", "0"]
    # Before the tournament's own fit there is no event column, and the legend says less.
    plain = standings_table(_standings(own=False), "", "2v2")
    assert "event" not in plain and "2v2 pool" in plain


def test_an_interval_too_wide_to_say_anything_is_not_enough_games_yet() -> None:
    """The first fits of a bot, over a game or two, give intervals like [-3006, 2388]:
    wider than MAX_INTERVAL_ELO (800), they are shown as "not enough games yet"."""
    assert interval_text(-3006.2, 2388.4) == "not enough games yet"
    assert interval_text(-400.0, 400.0) == "[-400, 400]"  # 800 wide: shown
    assert interval_text(-12.4, 140.6, 5) == "[  -12,   141]"
    assert interval_text(None, None) == ""
    resp = rating_pb2.GetRatingsResponse(method="batch", games=3, boards=3)
    resp.ratings.add(bot_id="b-1", name="old", rating=50, ci_low=-100, ci_high=200, games=90)
    resp.ratings.add(bot_id="b-2", name="new", rating=-50, ci_low=-3006, ci_high=2388, games=1)
    lines = ratings_table(resp).splitlines()
    assert lines[1].split()[2:7] == ["50", "[", "-100,", "200]", "90"]
    assert lines[2].split()[2:7] == ["-50", "not", "enough", "games", "yet"]
    assert "(not enough games yet: an interval wider than 800 Elo" in lines[-1]


def test_elo_and_plural() -> None:
    assert [elo(v) for v in (-0.4, -0.6, 0.5, 1.5, 399.7)] == ["0", "-1", "0", "2", "400"]
    assert plural(1, "game") == "1 game" and plural(2, "game") == "2 games"
    assert plural(0, "board") == "0 boards"


def test_ratings_table_explains_los_and_counts_in_the_singular() -> None:
    resp = rating_pb2.GetRatingsResponse(method="m", games=1, fitted_games=1, boards=1)
    resp.ratings.add(bot_id="b-1", name="a", rating=-0.2, games=1, ci_low=-0.3, ci_high=0.2,
                     los_next=0.5)
    text = ratings_table(resp, "ratings")
    assert "LOS>next: the chance that the bot is stronger than the one just below it" in text
    assert "1 game, 1 board" in text and "1 games" not in text
    assert "-0" not in text


def test_tournament_list_is_a_table_newest_first_as_given() -> None:
    ts = [tournament_pb2.Tournament(
        tournament_id=f"t-{i}", status=tournament_pb2.TOURNAMENT_STATUS_RUNNING,
        matches_total=10, matches_done=i, spec=tournament_pb2.TournamentSpec(
            name=f"night {i}", players=3, bot_ids=["a", "b", "c"],
            format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN)) for i in (2, 1)]
    lines = tournament_list(ts).splitlines()
    assert lines[0].split()[:3] == ["id", "status", "games"]
    assert lines[1].split()[:4] == ["t-2", "running", "2/10", "3p"]
    assert lines[1].endswith("night 2") and lines[2].endswith("night 1")


@pytest.mark.parametrize(("board", "label"), [
    ("t-1/x1-r3", "round 3"), ("x2-r3", "round 3 (pass 2)"), ("t-9/x1-r4-t2", "round 4, table 2"),
    ("t-1/W2-1-s1", "W2-1 set 1"), ("t-1/GF-1-s3", "GF-1 set 3"), ("W3-1-p2", "W3-1 pair 2"),
    ("odd", "odd"),
])
def test_board_labels(board: str, label: str) -> None:
    assert board_label(board) == label


def test_a_rate_counts_from_when_following_began() -> None:
    out = io.StringIO()
    bar = Progress(10, "t", enabled=False, stream=out)
    bar.begin(9)  # a tournament followed with 9 of 10 games played already
    bar.start -= 1.0
    bar.update(9, note="0 in play")
    assert "9/10 games, 0 in play" in bar.line(9) and "/s" not in bar.line(9)
    bar.update(10)
    assert "1.0/s" in bar.line(10) or "0.9/s" in bar.line(10)  # one game in ~1 s, not 10


@pytest.mark.parametrize(("argv", "hint"), [
    (["tournament", "create", "--name", "x", "--bots", "a", "--tiem-per-move", "2s"],
     "did you mean --time-per-move?"),
    (["ratings", "--pol", "3p"], "did you mean --pool?"),
    (["tournamnet", "list"], "did you mean tournament?"),
    (["tournament", "lst"], "did you mean list?"),
    (["bot", "rn"], "did you mean run?"),
])
def test_a_typo_gets_the_nearest_flag_or_command(argv: list[str], hint: str) -> None:
    with pytest.raises(UsageError) as info:
        build_parser().parse_args(argv)
    assert hint in str(info.value) and "\n" not in str(info.value)


def test_a_bot_module_without_the_class_names_the_classes_it_has() -> None:
    with pytest.raises(ValueError) as info:
        load_bot("examples.highest_bot:Nope")
    assert str(info.value) == ("module 'examples.highest_bot' has no class 'Nope' "
                               "(its bot classes: HighestBot)")
    with pytest.raises(ValueError, match="is the base class itself"):
        load_bot("examples.highest_bot:Bot")
    with pytest.raises(ValueError, match="did you mean greedy"):
        load_bot("gredy")
    assert load_bot("examples.highest_bot:HighestBot").__name__ == "HighestBot"


def _spec(fmt: str, players: int, ratings: dict[str, float] | None, seeding: str = "rating"
          ) -> tuple[tuple[str, ...], str]:
    bots = [(f"b-{i}", f"bot{i}") for i in range(1, 7)]
    spec = make_spec(tournament_id="t-1", name="n", players=players, format=fmt, bots=bots,
                     rules={}, clock=Clock(), faults=Faults(), seed=7, duplicate="boards",
                     seeding=seeding, ratings=ratings)
    return spec.bot_ids, spec.seeding


def test_a_round_robin_seats_its_bots_in_the_order_given_whatever_their_ratings() -> None:
    given = tuple(f"b-{i}" for i in range(1, 7))
    ratings = {"b-6": 300.0, "b-5": 200.0, "b-1": -100.0}
    assert _spec("round_robin", 3, ratings) == (given, "rating")
    assert _spec("round_robin", 4, ratings)[0] == given


def test_a_bracket_seeds_by_rating_and_says_when_nobody_has_one() -> None:
    ratings = {"b-6": 300.0, "b-5": 200.0, "b-1": -100.0, "x-other": 900.0}
    order, seeding = _spec("single_elimination", 4, ratings)
    assert order[:2] == ("b-6", "b-5") and order[-1] == "b-1" and seeding == "rating"
    given = tuple(f"b-{i}" for i in range(1, 7))
    assert _spec("single_elimination", 4, {"x-other": 900.0}) == (given, "given")
    assert _spec("single_elimination", 4, None) == (given, "given")
    assert _spec("single_elimination", 4, ratings, "given") == (given, "given")


def test_a_formats_ranking_and_rounds_on_the_terminal() -> None:
    st = tournament_pb2.Standings()
    for b in ("a", "b", "c"):
        st.rows.add(bot_id=f"b-{b}", name=b)
    st.ranking.columns.add(key="points", title="Points", explanation="game points")
    st.ranking.columns.add(key="buchholz", title="Buchholz", explanation="their opponents'")
    st.ranking.rows.add(rank=1, bot_ids=["b-a", "b-b"], values=[1.5, 2.0], games=1, byes=1,
                        rounds=[tournament_pb2.EntrantRound(table=2, points=1.0),
                                tournament_pb2.EntrantRound(table=0, points=0.5)])
    st.ranking.columns.add(key="duplicate", title="Duplicate", explanation="same cards")
    st.ranking.columns.add(key="rating", title="Rating", explanation="pool rating")
    st.ranking.rows[0].values.extend([2 / 3, 218.46])
    st.ranking.rows.add(rank=2, bot_ids=["b-c"], values=[0.0, 1.0, -1 / 6, -0.4], games=1,
                        rounds=[tournament_pb2.EntrantRound(table=2)])
    st.rounds.add(number=1, board="t-1/r1", tables=[tournament_pb2.RoundTable(
        bot_ids=["b-a", "b-c", "b-b", "b-c"], points=[1, 0])], bye_bot_ids=["b-c"])
    text = ranking_text(st, "final")
    lines = text.splitlines()
    assert lines[0] == "final"
    assert lines[2].split()[:8] == ["1", "a", "&", "b", "1.5", "2", "0.67", "218"]
    assert lines[3].split()[:6] == ["2", "c", "0", "1", "-0.17", "0"]  # a mean to 2 places
    assert lines[2].split()[-4:] == ["t2", "1", "bye", "0.5"]
    assert lines[3].split()[-2:] == ["t2", "?"]  # not public yet
    assert "(ranked by points, then buchholz, then duplicate, then rating)" in text
    assert "  buchholz: their opponents'" in text
    assert rounds_text(st, 4).splitlines() == [
        "round 1 (board t-1/r1):", "  table 1: a & b vs c -> 1, 0", "  bye: c"]
    assert ranking_text(tournament_pb2.Standings()) == ""
    # An entrant no bot of which the pool rates shows `unrated`, not the 0 it counts as.
    rated = ranking_text(st, "final", rated={"b-b"}).splitlines()
    assert rated[2].split()[7] == "218" and rated[3].split()[5] == "unrated"


def test_an_unrated_bot_shows_no_rating() -> None:
    text = standings_table(_standings(own=False), "", "3p", rated={"b-1"})
    rows = [line.split() for line in text.splitlines()[1:3]]
    assert rows[0][1] == "alpha" and rows[0][-2] == "13"
    assert rows[1][1] == "beta" and rows[1][-2] == "unrated"
