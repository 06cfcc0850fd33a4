"""Transcripts in the `moon-transcript/1` format: write, read, replay and check.

A transcript is one JSON object per finished game (one per line in a `.jsonl`
file). It is derived from the rules, the seed and the action list by replaying
them with recording on, and `replay` goes the other way: it rebuilds the action
list from a transcript, replays it with every action checked, and fails with a
TranscriptError if a recorded deal, trick winner, point or score disagrees.
Fields may be added to the format; existing ones never change meaning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from moon.actions import DISCARD_BASE, PASS, PLAY_BASE, TRUMP_BASE
from moon.contracts import parse_contract
from moon.deal import check_seed
from moon.errors import MoonError, TranscriptError
from moon.rules import Rules
from moon.state import GameState
from moon.tiles import Tile

__all__ = [
    "FORMAT",
    "actions_of",
    "read_jsonl",
    "replay",
    "transcript",
    "write_jsonl",
]

FORMAT = "moon-transcript/1"


def transcript(
    rules: Rules,
    seed: int,
    actions: Sequence[int],
    seats: Sequence[str],
    *,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The transcript of a game given its rules, seed, action ids and seat names.

    The game need not be over (a forfeit ends it early); `extra` adds or
    overrides top-level fields such as `end` and `forfeit`.
    """
    if len(seats) != rules.players:
        raise TranscriptError(f"{len(seats)} seat names for a {rules.players}-player game")
    st = GameState.new(rules, seed, record=True)
    for aid in actions:
        st.apply_id(aid)
    out: dict[str, Any] = {
        "format": FORMAT,
        "players": rules.players,
        "seed": seed,
        "rules": rules.options(),
        "seats": list(seats),
        "hands": st.hand_log,
        "final": list(st.scores),
        "winner": st.winner,
        "end": st.end,
    }
    if not st.is_over:
        # A game cut short (a forfeit) keeps the hand it stopped in, unfinished trick and all.
        out["partial_hand"] = st.hand_record()
    if extra:
        out.update(extra)
    return out


def actions_of(record: dict[str, Any]) -> list[int]:
    """The action ids a transcript records, in order, as the engine numbers them."""
    try:
        rules = Rules.make(int(record["players"]), record["rules"])
        ids: list[int] = []
        hands = list(record["hands"])
        if record.get("partial_hand") is not None:
            hands.append(record["partial_hand"])
        for hand in hands:
            for b in hand["bids"]:
                ids.append(PASS if b["bid"] == "pass" else int(b["bid"]))
            if hand["bidder"] is None:
                continue
            trump = (
                [TRUMP_BASE + parse_contract(str(hand["trump"]))]
                if hand.get("trump") is not None
                else []
            )
            discard = (
                [DISCARD_BASE + Tile.parse(hand["discard"]).index]
                if hand.get("discard") is not None
                else []
            )
            ids += [*trump, *discard] if rules.trump_before_widow else [*discard, *trump]
            for trick in hand["tricks"]:
                ids += [PLAY_BASE + Tile.parse(p["tile"]).index for p in trick["plays"]]
        return ids
    except (KeyError, TypeError, ValueError) as exc:
        raise TranscriptError(f"malformed transcript: {exc!r}") from exc


def replay(record: dict[str, Any]) -> GameState:
    """Replay a transcript with every action checked; raise if anything disagrees."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise TranscriptError(f"not a {FORMAT} transcript: format={found!r}")
    rules, seed, seats = _header(record)
    st = GameState.new(rules, seed, record=True)
    try:
        for aid in actions_of(record):
            st.apply(aid)
    except MoonError as exc:
        raise TranscriptError(f"transcript does not replay: {exc}") from exc
    rebuilt = transcript(rules, seed, st.actions, seats)
    # A game the rules ended names its winner by the rules; a forfeit's winner is the
    # referee's adjudication (workers.outcome), not something replay can derive.
    compared = ("hands", "final", "winner") if st.is_over else ("hands", "final", "partial_hand")
    for key in compared:
        where = _difference(rebuilt[key], record.get(key), "")
        if where is not None:
            raise TranscriptError(f"transcript disagrees with the rules at {key}{where}")
    end = record.get("end")
    if st.is_over and end != st.end:
        raise TranscriptError(f"transcript says end={end!r}, replay gives {st.end!r}")
    if not st.is_over and (end is None or end in ("normal", "hand_limit")):
        # A game cut short (a forfeit, say) must say why; "normal" and "hand_limit"
        # are only for games that the rules ended.
        raise TranscriptError(f"transcript says end={end!r}, but the game is not over "
                              f"after {len(rebuilt['hands'])} hands")
    return st


def _header(record: dict[str, Any]) -> tuple[Rules, int, list[str]]:
    """Rules, seed and seat names of a transcript, checked for type and completeness."""
    players, options = record.get("players"), record.get("rules")
    seed, seats = record.get("seed"), record.get("seats")
    if type(players) is not int or type(seed) is not int or not isinstance(options, dict):
        raise TranscriptError(
            f"malformed transcript header: players={players!r}, seed={seed!r} and rules "
            f"must be two integers and an object"
        )
    if not isinstance(seats, list) or not all(isinstance(s, str) for s in seats):
        raise TranscriptError(f"malformed transcript header: seats={seats!r}")
    try:
        rules = Rules.make(players, options)
        check_seed(seed)
    except MoonError as exc:
        raise TranscriptError(f"malformed transcript header: {exc}") from exc
    if _difference(rules.options(), options, "") is not None:
        raise TranscriptError(
            f"malformed transcript header: rules must list every option with its value "
            f"exactly, {rules.options()!r}; found {options!r}"
        )
    return rules, seed, seats


def _difference(a: object, b: object, path: str) -> str | None:
    """Where recorded `b` departs from rebuilt `a`, or None when it agrees.

    Every field of `a` must be in `b` with the same value and JSON type (`true` is
    not `1`); fields that only `b` has are ignored, since the format may add fields.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                return f"{path}.{k} (missing)"
            where = _difference(a[k], b[k], f"{path}.{k}")
            if where is not None:
                return where
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            where = _difference(x, y, f"{path}[{i}]")
            if where is not None:
                return where
        if len(a) != len(b):
            return f"{path} (length {len(b)}, replay gives {len(a)})"
        return None
    if type(a) is type(b) and a == b:
        return None
    return f"{path} (recorded {b!r}, replay gives {a!r})"


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Append transcripts to a `.jsonl` file, one per line; returns how many."""
    count = 0
    with open(path, "a", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
            count += 1
    return count


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Transcripts from a `.jsonl` file, one per non-empty line."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TranscriptError(f"{path}:{lineno}: not JSON: {exc}") from exc
