"""The compact game encoding (archive.codec): every transcript comes back byte for byte.

Transcripts are the golden ones and random games of every rules variant, finished as
the match job finishes them (`workers.match.Match._finish`: its `extra`, rebuilt here
by `stack_transcript`, for a tournament's game, a test's, an arena's and a single
match), with strikes in `faults` and forfeits that cut games short.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive.codec import (
    FALLBACK_TEMPLATE,
    CodecError,
    decode,
    encode,
    entropy_bits,
    is_compact,
    template_id,
)
from moon import GameState, Rules
from moon.actions import ACTIONS, MOON
from moon.transcript import read_jsonl, transcript
from store.records import Clock, Faults, MatchSpec
from store.refs import EventRef
from store.results import transcript_extra
from tests.test_engine_properties import choose, rules_st, seeds

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.jsonl"))
KNOWN_KEYS = ("match_id", "seed", "bot_ids", "board", "unit")
REPLAY_NOTE = ("head-to-head duplicate (duplicate=replay): the same bots replay each deal at "
               "every seating, which is fair only among bots that keep no memory between games")


def text(t: dict[str, Any]) -> str:
    return json.dumps(t, separators=(",", ":"))


def known_of(t: dict[str, Any]) -> dict[str, Any]:
    """What the archive keeps in columns (a single match has no board or unit)."""
    return {k: t.get(k, "") for k in KNOWN_KEYS if k in t or k in ("board", "unit")}


def round_trip(t: dict[str, Any], known: dict[str, Any] | None = None) -> bytes:
    """Encode, decode, compare the JSON bytes; the blob."""
    packed = encode(t, known)
    assert text(decode(packed.template, packed.blob, known)) == text(t)
    return packed.blob


# ------------------------------------------------ games as the stack finishes them

EVENTS: list[tuple[EventRef | None, dict[str, Any]]] = [
    (None, {}),
    (EventRef.tournament("t-0a1b2c3d4e"), {"unit": "r2-t1", "duplicate": "boards", "notes": []}),
    (EventRef.tournament("t-9f8e7d6c5b"), {"unit": "s3", "duplicate": "replay",
                                           "notes": [REPLAY_NOTE]}),
    (EventRef.test("c-1234abcd99"), {"unit": "p17", "duplicate": "pairs",
                                     "notes": ["a test of a change: each board is played "
                                               "twice", "a pair ... is void"]}),
    (EventRef.arena("3p"), {"unit": "b17", "duplicate": "boards"}),
]
BOTS = [("house:greedy", "house:greedy"), ("house:random", "house:random"),
        ("house:pimc?samples=64&solve=3", "house:pimc?samples=64&solve=3"),
        ("b-0a1b2c3d4e5f", "alice"), ("b-77aa88bb99cc", "bob-v2"), ("b-123456abcdef", "Zoë")]


def match_id_of(event: EventRef | None, unit: str, table: int) -> str:
    if event is None:
        return "m-5e1f00d2a1b3"
    if event.kind == "arena":
        return f"m-a{event.id}{unit}t{table}"
    return f"{event.id}-{unit}-g{table + 1}"


def board_of(event: EventRef, unit: str) -> str:
    return f"arena-{event.id}/{unit}" if event.kind == "arena" else f"{event.id}/{unit}"


def stack_transcript(rules: Rules, seed: int, rng: random.Random, *,
                     event: EventRef | None = None, meta: dict[str, Any] | None = None,
                     strike_rate: float = 0.0, max_strikes: int = 3,
                     disconnect_at: int | None = None, bots: list[tuple[str, str]] | None = None,
                     table: int = 0, play: Any = None) -> dict[str, Any]:
    """A game played to its end or to a forfeit, finished as `workers.match` finishes it.

    Strikes replace the seat's action (a random legal one never the moon, as `_replace`
    does) with the fault `_account` writes; `max_strikes` forfeits; a seat still away at
    action `disconnect_at` forfeits as a disconnect does.
    """
    n = rules.players
    seats = bots or [rng.choice(BOTS) for _ in range(n)]
    bot_ids, names = [b for b, _ in seats], [s for _, s in seats]
    meta = meta or {}
    st = GameState.new(rules, seed)
    faults: list[dict[str, Any]] = []
    strikes = [0] * n
    forfeit: tuple[int, str] | None = None
    while not st.is_over:
        seq, seat = len(st.actions), st.to_act
        if seq == disconnect_at:
            forfeit = (seat, f"disconnected for more than {30000 / 1000:g} s")
            break
        if rng.random() < strike_rate:
            legal = st.legal_ids()
            aid = rng.choice([a for a in legal if a != MOON] or legal)
            kind = rng.choice(["late", "illegal"])
            note = (f"no answer within {rng.choice([1000, 2500])} ms" if kind == "late"
                    else f"{ACTIONS[rng.choice(list(ACTIONS))].label!r} is not a legal action "
                         f"here")
            strikes[seat] += 1
            faults.append({"seq": seq, "hand": st.hand_index + 1, "seat": seat, "kind": kind,
                           "reason": note, "replacement": ACTIONS[aid].label})
            st.apply_id(aid)
            if strikes[seat] >= max_strikes:
                forfeit = (seat, f"{strikes[seat]} strikes (late or illegal answers)")
                break
        else:
            st.apply_id(play(st, rng) if play else choose(st, rng, 0.3))
    # What workers.match.MatchHost._finish adds, by the one function it calls.
    unit = str(meta.get("unit", ""))
    spec = MatchSpec(
        match_id=match_id_of(event, unit, table), rules=rules, seed=seed,
        bot_ids=tuple(bot_ids), seat_names=tuple(names), clock=Clock(1000, 10000),
        faults=Faults(max_strikes, 30000), event=event,
        meta={} if event is None else {**meta, "board": board_of(event, unit), "unit": unit,
                                       "duplicate": str(meta.get("duplicate", "boards")),
                                       "notes": list(meta.get("notes", []))})
    extra = transcript_extra(spec, faults, forfeit, st.scores)
    return transcript(rules, seed, st.actions, names, extra=extra)


def random_rules(rng: random.Random) -> Rules:
    """Any valid rule set (as `rules_st`), small limits so that games stay short."""
    players = rng.choice([3, 4])
    double_blank = True if players == 4 else rng.random() < 0.5
    return Rules.make(players, {
        "target": rng.choice([1, 4, 10, 21, 40]), "min_bid": rng.choice([3, 4, 5]),
        "all_pass": rng.choice(["redeal", "forced"]), "double_blank": double_blank,
        "trump_before_widow": players == 3 and double_blank and rng.random() < 0.5,
        "scoring": rng.choice(["points", "marks"]), "marks_target": rng.randint(1, 7),
        "moon_wins": rng.random() < 0.5, "max_hands": rng.choice([1, 2, 3, 5, 8, 30]),
    })


def random_stack_game(rng: random.Random, rules: Rules | None = None) -> dict[str, Any]:
    rules = rules or random_rules(rng)
    event, meta = rng.choice(EVENTS)
    if event is not None and event.kind == "arena" and rules.players == 4:
        event = EventRef.arena("2v2")
    mode = rng.random()
    return stack_transcript(
        rules, rng.randrange(2**64), rng, event=event, meta=meta,
        strike_rate=0.0 if mode < 0.4 else rng.choice([0.01, 0.05, 0.3]),
        max_strikes=rng.choice([1, 3, 5, 1000]),
        disconnect_at=rng.randrange(60) if mode > 0.85 else None, table=rng.randrange(3))


# ------------------------------------------------------------------ round trips


def test_golden_transcripts_round_trip_on_the_fast_path() -> None:
    count = 0
    for path in GOLDEN:
        for t in read_jsonl(path):
            for known in (None, {"seed": t["seed"]}, {"seed": t["seed"], "match_id": "m-x"}):
                assert is_compact(round_trip(t, known))
            count += 1
    assert count >= 8


def test_random_stack_games_round_trip_on_the_fast_path() -> None:
    rng = random.Random(25)
    forfeits = faulted = cut = 0
    players = {3: 0, 4: 0}
    for i in range(3000):
        t = random_stack_game(rng)
        blob = round_trip(t, known_of(t))
        assert is_compact(blob), t
        if i % 5 == 0:
            assert is_compact(round_trip(t))  # nothing known: all in the blob
        forfeits += "forfeit" in t
        cut += "partial_hand" in t
        faulted += bool(t["faults"])
        players[t["players"]] += 1
    # The mix covers what it should.
    assert forfeits > 300 and cut > 200 and faulted > 600 and min(players.values()) > 1000


def test_every_option_combination_round_trips() -> None:
    rng = random.Random(7)
    combos = 0
    for players, db, tbw, min_bid, all_pass, scoring, moon_wins in itertools.product(
        (3, 4), (True, False), (False, True), (3, 4, 5), ("redeal", "forced"),
        ("points", "marks"), (False, True),
    ):
        if (players == 4 and not db) or (tbw and not (players == 3 and db)):
            continue
        rules = Rules.make(players, {
            "double_blank": db, "trump_before_widow": tbw, "min_bid": min_bid,
            "all_pass": all_pass, "scoring": scoring, "moon_wins": moon_wins,
            "max_hands": 3, "target": 10, "marks_target": 2,
        })
        for _ in range(3):
            t = random_stack_game(rng, rules)
            assert is_compact(round_trip(t, known_of(t)))
        combos += 1
    assert combos == 96


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32),
       event=st.sampled_from(range(len(EVENTS))), strike_rate=st.sampled_from([0, 0.02, 0.2]),
       max_strikes=st.integers(1, 4), disconnect_at=st.none() | st.integers(0, 80),
       with_known=st.booleans())
def test_any_game_round_trips(rules: Rules, seed: int, rng_seed: int, event: int,
                              strike_rate: float, max_strikes: int, disconnect_at: int | None,
                              with_known: bool) -> None:
    ref, meta = EVENTS[event]
    if ref is not None and ref.kind == "arena" and rules.players == 4:
        ref = EventRef.arena("2v2")
    t = stack_transcript(rules, seed, random.Random(rng_seed), event=ref, meta=meta,
                         strike_rate=strike_rate, max_strikes=max_strikes,
                         disconnect_at=disconnect_at)
    assert is_compact(round_trip(t, known_of(t) if with_known else None))


def test_bare_transcripts_and_a_game_with_no_action_round_trip() -> None:
    rng = random.Random(3)
    for players in (3, 4):
        rules = Rules.make(players)
        st_ = GameState.new(rules, 99)
        while not st_.is_over:
            st_.apply_id(choose(st_, rng))
        names = [f"s{i}" for i in range(players)]
        for cut in (0, 1, len(st_.actions) // 2, len(st_.actions)):
            t = transcript(rules, 99, st_.actions[:cut], names)
            if cut < len(st_.actions):
                t.update(end="forfeit", forfeit={"seat": 0, "reason": "gone"}, winner=1)
            assert is_compact(round_trip(t))


def test_one_event_shares_one_template() -> None:
    rng = random.Random(11)
    rules = Rules.make(3)
    event, meta = EVENTS[3]
    templates = set()
    kinds = set()
    for i in range(30):
        t = stack_transcript(rules, rng.randrange(2**64), rng, event=event, meta=meta,
                             strike_rate=0.05 if i % 2 else 0.0, max_strikes=2,
                             disconnect_at=40 if i % 7 == 0 else None, table=i)
        packed = encode(t, known_of(t))
        templates.add(packed.template)
        kinds.add(("forfeit" in t, "partial_hand" in t, bool(t["faults"])))
    assert len(kinds) >= 3  # normal games, forfeits after strikes, disconnects
    assert len(templates) == 1
    template = json.loads(templates.pop())
    assert template["known"] == ["seed", "match_id", "bot_ids", "board", "unit"]
    assert template["shared"]["test_id"] == event.id and "seats" in template["game"]
    assert template_id(json.dumps(template, separators=(",", ":"))) != template_id("{}")


def test_the_action_number_meets_the_entropy_bound() -> None:
    rng = random.Random(5)
    for _ in range(40):
        rules = Rules.make(rng.choice([3, 4]))
        bots = [BOTS[0]] * rules.players  # house bots: seat names are their ids
        event = EventRef.arena("3p" if rules.players == 3 else "2v2")
        t = stack_transcript(rules, rng.randrange(2**64), rng, event=event, meta=EVENTS[4][1],
                             bots=bots)
        blob = encode(t, known_of(t)).blob
        # version, flags, crc, fields length, one code per seat; the rest is the number.
        assert len(blob) <= math.ceil(entropy_bits(t) / 8) + 7 + rules.players


# ------------------------------------------------------------------ the fallback


def _golden() -> dict[str, Any]:
    return next(read_jsonl(GOLDEN[0]))


def test_an_unknown_top_level_field_stays_on_the_fast_path() -> None:
    t = _golden()
    t["started_at"] = 1765000000.25
    t["flags"] = {"rated": True, "n": 1}
    assert is_compact(round_trip(t))


@pytest.mark.parametrize("change", [
    "unknown field in a hand", "older hand shape", "actions that do not replay",
    "partial hand of a finished game", "a bool seed", "fault not as written",
    "seats not strings",
])
def test_what_the_fast_path_cannot_hold_round_trips_whole(change: str) -> None:
    t = stack_transcript(Rules.make(3), 12345, random.Random(1), strike_rate=0.1,
                         max_strikes=100)
    assert t["faults"]
    if change == "unknown field in a hand":
        t["hands"][0]["clock_ms"] = [12, 40]
    elif change == "older hand shape":
        for h in t["hands"]:
            del h["tricks_won"]
    elif change == "actions that do not replay":
        plays = t["hands"][0]["tricks"][0]["plays"]
        plays[0]["tile"], plays[1]["tile"] = plays[1]["tile"], plays[0]["tile"]
    elif change == "partial hand of a finished game":
        t["partial_hand"] = None
    elif change == "a bool seed":
        t["seed"] = True
    elif change == "fault not as written":
        t["faults"][0]["hand"] = 99  # kept, though replay says otherwise
    elif change == "seats not strings":
        t["seats"] = [1, 2, 3]
    packed = encode(t)
    if change == "fault not as written":
        assert is_compact(packed.blob)  # the faults go as JSON, the rest stays compact
    else:
        assert not is_compact(packed.blob) and packed.template == FALLBACK_TEMPLATE
    assert text(decode(packed.template, packed.blob)) == text(t)


def test_an_older_rules_shape_stays_on_the_fast_path() -> None:
    t = _golden()
    del t["rules"]["moon_wins"]  # written before the option existed: its default
    assert is_compact(round_trip(t))


def test_known_values_that_differ_go_in_the_blob() -> None:
    t = random_stack_game(random.Random(2))
    known = known_of(t) | {"match_id": "m-other", "bot_ids": ["x"]}
    packed = encode(t, known)
    assert is_compact(packed.blob)
    assert "match_id" not in json.loads(packed.template)["known"]
    assert text(decode(packed.template, packed.blob, known)) == text(t)


def test_what_is_not_json_is_refused() -> None:
    with pytest.raises(CodecError, match="not JSON"):
        encode({"a": {1, 2}})
    with pytest.raises(CodecError, match="JSON object"):
        encode([1, 2])  # type: ignore[arg-type]


# -------------------------------------------------------------- damage is caught


def _packed_games() -> list[tuple[str, bytes, dict[str, Any]]]:
    rng = random.Random(9)
    out = []
    for disconnect in (None, 30):
        t = stack_transcript(Rules.make(3, {"max_hands": 6}), 77, rng, event=EVENTS[4][0],
                             meta=EVENTS[4][1], strike_rate=0.05, max_strikes=9,
                             disconnect_at=disconnect)
        p = encode(t, known_of(t))
        assert is_compact(p.blob)
        out.append((p.template, p.blob, known_of(t)))
    t = _golden()
    t["hands"][0]["extra"] = 1
    p = encode(t)
    assert not is_compact(p.blob)
    out.append((p.template, p.blob, {}))
    return out


def test_a_truncated_blob_raises() -> None:
    for template, blob, known in _packed_games():
        for n in range(len(blob)):
            with pytest.raises(CodecError):
                decode(template, blob[:n], known)


def test_a_flipped_bit_raises() -> None:
    for template, blob, known in _packed_games():
        for i in range(len(blob)):
            for mask in (0x01, 0x10, 0x80):
                damaged = bytearray(blob)
                damaged[i] ^= mask
                with pytest.raises(CodecError):
                    decode(template, bytes(damaged), known)


def test_wrong_version_template_or_known_values_raise() -> None:
    (template, blob, known), (other, _, _), _ = _packed_games()
    with pytest.raises(CodecError, match="version 7"):
        decode(template, b"\x07" + blob[1:], known)
    with pytest.raises(CodecError, match="takes 'match_id' from the known values"):
        decode(template, blob, {k: v for k, v in known.items() if k != "match_id"})
    with pytest.raises(CodecError, match="checksum"):
        decode(template, blob, known | {"bot_ids": known["bot_ids"][::-1]})
    with pytest.raises(CodecError, match="checksum"):
        decode(template.replace('"max_hands":6', '"max_hands":7'), blob, known)
    with pytest.raises(CodecError, match="fallback template"):
        decode(FALLBACK_TEMPLATE, blob, known)
    with pytest.raises(CodecError, match="codec template"):
        decode("[]", blob, known)
    assert isinstance(CodecError("x"), ValueError)
    assert other
