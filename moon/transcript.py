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
    if extra:
        out.update(extra)
    return out


def actions_of(record: dict[str, Any]) -> list[int]:
    """The action ids a transcript records, in order, as the engine numbers them."""
    try:
        rules = Rules.make(int(record["players"]), record["rules"])
        ids: list[int] = []
        for hand in record["hands"]:
            for b in hand["bids"]:
                ids.append(PASS if b["bid"] == "pass" else int(b["bid"]))
            if hand["bidder"] is None:
                continue
            trump = TRUMP_BASE + parse_contract(str(hand["trump"]))
            discard = (
                [DISCARD_BASE + Tile.parse(hand["discard"]).index]
                if hand.get("discard") is not None
                else []
            )
            ids += [trump, *discard] if rules.trump_before_widow else [*discard, trump]
            for trick in hand["tricks"]:
                ids += [PLAY_BASE + Tile.parse(p["tile"]).index for p in trick["plays"]]
        return ids
    except (KeyError, TypeError, ValueError) as exc:
        raise TranscriptError(f"malformed transcript: {exc!r}") from exc


def replay(record: dict[str, Any]) -> GameState:
    """Replay a transcript with every action checked; raise if anything disagrees."""
    if record.get("format") != FORMAT:
        raise TranscriptError(f"not a {FORMAT} transcript: format={record.get('format')!r}")
    try:
        rules = Rules.make(int(record["players"]), record["rules"])
        seed = int(record["seed"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TranscriptError(f"malformed transcript header: {exc!r}") from exc
    st = GameState.new(rules, seed, record=True)
    try:
        for aid in actions_of(record):
            st.apply(aid)
    except MoonError as exc:
        raise TranscriptError(f"transcript does not replay: {exc}") from exc
    rebuilt = transcript(rules, seed, st.actions, record["seats"])
    for key in ("hands", "final", "winner"):
        if rebuilt[key] != record.get(key):
            where = _first_difference(rebuilt[key], record.get(key))
            raise TranscriptError(f"transcript disagrees with the rules at {key}{where}")
    if record.get("end") in ("normal", "hand_limit") and rebuilt["end"] != record["end"]:
        raise TranscriptError(f"transcript says end={record['end']!r}, replay gives "
                              f"{rebuilt['end']!r}")
    return st


def _first_difference(a: object, b: object, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if a[k] != b.get(k):
                return _first_difference(a[k], b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path} (length {len(b)}, replay gives {len(a)})"
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
