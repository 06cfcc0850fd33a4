"""Golden transcripts: a few full games pinned byte for byte under tests/golden/.

Each file was written by `moonshot selfplay ... --out FILE` with the arguments
in GOLDEN below. The tests check that every line has the moon-transcript/1
shape, replays with every action checked, and that the same command today
writes exactly the same bytes (same rules, seed and bots: same game, always).

After a deliberate change to the engine or the bots, regenerate with
`.venv/bin/python tests/test_golden.py --regenerate` and review the diff.

Hand-checked against RULES.md, on paper: 3p_default.jsonl, game 1 (seed 7), hand 1.
  deal  seat 0: 6-5 5-4 5-1 3-1 2-2 2-1 1-1   seat 1: 6-4 6-2 5-2 4-3 4-2 4-1 0-0
        seat 2: 6-3 6-1 5-5 5-3 4-4 3-3 3-2   widow: 6-6
    -> six 6s, five 5s, four 4s, three 3s, two 2s, 1-1, 0-0: the 22-tile set, once each,
       no 1-0..6-0; each seat's tiles sorted high end first.
  auction, first_bidder 1: seat 1 pass, seat 2 bids 5, seat 0 bids 6 (higher) -> each
    spoke once clockwise; seat 0 wins with 6, takes 6-6, discards 2-2, then names
    "none" (discard before trumps: trump_before_widow is off).
  tricks, no trump (doubles head their suits):
    1. 0 leads 6-6 (suit 6); 1 must follow (6-4, 6-2): 6-2; 2 must (6-3, 6-1): 6-1 -> 0.
    2. 0 leads 3-1: suit 3, the higher end; 1 must play its only 3, 4-3; 2 plays 5-3
       (holds 6-3 5-3 3-3 3-2) -> 5-3 ranks 5 in suit 3, above 4-3 and 3-1 -> 2.
    3. 2 leads 5-5; 0 follows 5-1; 1 must play 5-2 -> the double -> 2.
    4. 2 leads 4-4; 0 must play 5-4; 1 plays 4-1 -> 2.
    5. 2 leads 3-3; 0 (6-5 2-1 1-1) and 1 (6-4 4-2 0-0) hold no 3: 2-1, 4-2 -> 2.
    6. 2 leads 3-2: suit 3; nobody else holds a 3: 6-5, 6-4 do not follow -> 2.
    7. 2 leads 6-3; 0 has only 1-1, 1 only 0-0 -> 2.
  tricks_won [1, 0, 6]; seat 0 bid 6 and took 1: set, -6; the others one point per
  trick: points [-6, 0, 6], scores [-6, 0, 6], made false.
  Also checked: hand 2 (seat 2 bids 5, takes all 7, scores 5 only: [0, 0, 5]) and in
  hand 3 (trump 2) trick 2, where 1-1 is led and seat 0's 2-1 is a trump, not a 1, so
  seat 0 may trump with 4-2 and wins; the game ends at [-27, 18, 25], seat 2 first
  past 21 and alone on top: winner 2, end "normal".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_engine_properties import follows
from test_transcript import assert_transcript_shape

from clients.cli import main
from moon import Tile, TranscriptError
from moon.transcript import read_jsonl, replay

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

# file -> the `moonshot selfplay` arguments that wrote it
GOLDEN: dict[str, list[str]] = {
    "3p_default.jsonl": ["--players", "3", "--games", "2", "--seed", "7",
                         "--bots", "random,greedy,greedy"],
    "3p_variants.jsonl": ["--players", "3", "--games", "2", "--seed", "11",
                          "--bots", "greedy,random,greedy",
                          "--rule", "min_bid=5", "--rule", "trump_before_widow=true",
                          "--rule", "all_pass=forced", "--rule", "moon_wins=true"],
    "3p_no_double_blank.jsonl": ["--players", "3", "--games", "1", "--seed", "24",
                                 "--bots", "greedy,greedy,greedy",
                                 "--rule", "double_blank=false", "--rule", "target=15"],
    "3p_hand_limit.jsonl": ["--players", "3", "--games", "1", "--seed", "5",
                            "--bots", "random,random,random", "--rule", "max_hands=4"],
    "4p_default.jsonl": ["--players", "4", "--games", "2", "--seed", "3",
                         "--bots", "greedy,random,greedy,random"],
    "4p_marks.jsonl": ["--players", "4", "--games", "1", "--seed", "5",
                       "--bots", "greedy,greedy,random,greedy",
                       "--rule", "scoring=marks", "--rule", "marks_target=3"],
}


def _write(args: list[str], out: Path) -> None:
    if out.exists():
        out.unlink()
    assert main(["selfplay", *args, "--quiet", "--out", str(out)]) == 0


def test_the_golden_set_is_complete() -> None:
    assert sorted(p.name for p in GOLDEN_DIR.glob("*.jsonl")) == sorted(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_transcripts_have_the_format_and_replay(name: str) -> None:
    records = list(read_jsonl(GOLDEN_DIR / name))
    args = GOLDEN[name]
    games = int(args[args.index("--games") + 1])
    seed = int(args[args.index("--seed") + 1])
    bots = args[args.index("--bots") + 1].split(",")
    assert len(records) == games
    for k, rec in enumerate(records):
        assert_transcript_shape(rec)
        assert rec["seed"] == seed + k and rec["seats"] == bots
        assert rec["players"] == int(args[args.index("--players") + 1])
        state = replay(rec)
        assert state.is_over and state.scores == rec["final"]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_tampered_golden_transcript_fails(name: str) -> None:
    rec = next(read_jsonl(GOLDEN_DIR / name))
    last = rec["hands"][-1]
    last["points"][0] += 1
    last["scores"][0] += 1
    rec["final"][0] += 1  # consistent with itself, not with the rules
    with pytest.raises(TranscriptError, match="disagrees"):
        replay(rec)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_transcripts_regenerate_byte_for_byte(name: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / name
    _write(GOLDEN[name], out)
    capsys.readouterr()
    assert out.read_bytes() == (GOLDEN_DIR / name).read_bytes()


def test_golden_set_covers_the_variants() -> None:
    recs = {name: list(read_jsonl(GOLDEN_DIR / name)) for name in GOLDEN}
    hands = [h for rs in recs.values() for r in rs for h in r["hands"]]
    assert any(h["bidder"] is None for h in hands), "an all-pass redeal"
    assert {h["trump"] for h in hands} >= {*"0123456", "doubles", "none"}
    assert any(h["made"] is False for h in hands) and any(h["made"] for h in hands)
    assert recs["3p_hand_limit.jsonl"][0]["end"] == "hand_limit"
    assert len(recs["3p_hand_limit.jsonl"][0]["hands"]) == 4
    assert all(r["end"] == "normal" for r in recs["4p_default.jsonl"])
    assert all(r["rules"]["scoring"] == "marks" for r in recs["4p_marks.jsonl"])
    assert all(r["rules"]["trump_before_widow"] for r in recs["3p_variants.jsonl"])
    assert all(r["rules"]["double_blank"] is False and h["widow"] is None and
               h["discard"] is None for r in recs["3p_no_double_blank.jsonl"] for h in r["hands"])
    assert all(len(r["final"]) == 2 for name in ("4p_default.jsonl", "4p_marks.jsonl")
               for r in recs[name])


def _check_hand_by_the_rules(hand: dict[str, Any], players: int) -> None:
    """Re-derive one recorded hand from RULES.md (follows as restated in the tests)."""
    held = [{Tile.parse(t) for t in seat} for seat in hand["deal"]]
    b = hand["bidder"]
    if hand["widow"] is not None:
        held[b].add(Tile.parse(hand["widow"]))
        held[b].remove(Tile.parse(hand["discard"]))
    won = [0] * players
    leader = b
    for trick in hand["tricks"]:
        assert trick["leader"] == leader
        plays = [(p["seat"], Tile.parse(p["tile"])) for p in trick["plays"]]
        led = plays[0][1]
        for seat, tile in plays:
            assert tile in held[seat]
            if seat != leader:
                can = {t for t in held[seat] if follows(t, led, hand["trump"])}
                assert not can or tile in can, (seat, tile, can)
            held[seat].remove(tile)
        leader = trick["winner"]
        won[leader] += 1
    assert won == hand["tricks_won"]
    assert all(not h for h in held)


def test_hand_checked_by_hand() -> None:
    # The hand worked through in the module docstring, field by field.
    rec = next(read_jsonl(GOLDEN_DIR / "3p_default.jsonl"))
    assert (rec["seed"], rec["final"], rec["winner"], rec["end"]) == (7, [-27, 18, 25], 2,
                                                                     "normal")
    h = rec["hands"][0]
    assert h["first_bidder"] == 1
    assert h["deal"] == [["6-5", "5-4", "5-1", "3-1", "2-2", "2-1", "1-1"],
                         ["6-4", "6-2", "5-2", "4-3", "4-2", "4-1", "0-0"],
                         ["6-3", "6-1", "5-5", "5-3", "4-4", "3-3", "3-2"]]
    assert h["widow"] == "6-6"
    assert h["bids"] == [{"seat": 1, "bid": "pass"}, {"seat": 2, "bid": 5},
                         {"seat": 0, "bid": 6}]
    assert (h["bidder"], h["bid"], h["trump"], h["discard"]) == (0, 6, "none", "2-2")
    assert [(t["leader"], [p["tile"] for p in t["plays"]], t["winner"]) for t in h["tricks"]] == [
        (0, ["6-6", "6-2", "6-1"], 0),
        (0, ["3-1", "4-3", "5-3"], 2),
        (2, ["5-5", "5-1", "5-2"], 2),
        (2, ["4-4", "5-4", "4-1"], 2),
        (2, ["3-3", "2-1", "4-2"], 2),
        (2, ["3-2", "6-5", "6-4"], 2),
        (2, ["6-3", "1-1", "0-0"], 2),
    ]
    assert h["tricks_won"] == [1, 0, 6] and h["made"] is False
    assert h["points"] == [-6, 0, 6] and h["scores"] == [-6, 0, 6]
    h2, h3 = rec["hands"][1], rec["hands"][2]
    assert (h2["bidder"], h2["bid"], h2["tricks_won"], h2["points"]) == (2, 5, [0, 0, 7],
                                                                          [0, 0, 5])
    assert h3["trump"] == "2" and h3["tricks"][1]["plays"][1] == {"seat": 0, "tile": "4-2"}
    assert h3["tricks"][1]["winner"] == 0
    _check_hand_by_the_rules(h, 3)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_golden_hand_follows_the_rules(name: str) -> None:
    for rec in read_jsonl(GOLDEN_DIR / name):
        for h in rec["hands"]:
            if h["bidder"] is not None:
                _check_hand_by_the_rules(h, rec["players"])


if __name__ == "__main__" and "--regenerate" in sys.argv:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for _name, _args in GOLDEN.items():
        _write(_args, GOLDEN_DIR / _name)
        print(_name, json.dumps(_args))
