"""The compact game encoding (archive.codec): bytes per game against the JSON and the bound.

Run `python bench/codec.py [--games N]`. It plays N full 3p games (default rules) for
each kind of table, finishes each as the match job does for an arena game
(`workers.match`: match id, bot ids, clock, faults, the event's fields), encodes it
with the values the archive keeps in columns as `known` (match id, seed, bot ids,
board, unit), and prints one figure per line, `name: value unit`:

- `<table> blob mean/p95`: the game's own bytes (`Packed.blob`);
- `<table> JSON transcript mean`: its `moon-transcript/1` JSON, compact separators;
- `<table> zlib JSON mean`: that JSON through zlib -9, for comparison;
- `<table> ratio JSON/blob`: mean JSON bytes over mean blob bytes;
- `<table> entropy bound mean`: log2 of the product of the legal counts, in bytes
  (`entropy_bits`), what the actions alone cost under a uniform-legal model;
- `<table> fast path`: the share of games encoded compactly (not the whole JSON);
- `template`: the bytes of the template the games of the arena share (stored once);
- `<table> encode/decode`: games per second of this process's CPU time (a game's
  cost follows its length: a random game is about six times a greedy one).

Tables: `random` (three `bots.RandomPlayer`s: long games, random bidding drags every
score down), `greedy` (three `bots.GreedyPlayer`s, the house player: realistic
games), both with house bots, whose seat names are their ids; and `greedy named`, the
same games with seats named as remote bots are (`alice`, ...), which the blob holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from pathlib import Path
from typing import Any

# `python bench/codec.py` puts bench/ first on the path, where bench/bots.py would shadow
# the package of that name: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archive.codec import decode, encode, entropy_bits, is_compact
from bots import GreedyPlayer, Player, RandomPlayer
from moon import GameState, Rules
from moon.transcript import transcript

_clock = time.process_time


def play(players: list[Player], seed: int) -> list[int]:
    """A full game of default rules between `players`; its action ids."""
    st = GameState.new(Rules(players=len(players)), seed)
    while not st.is_over:
        seat = st.to_act
        st.apply_id(players[seat].decide(st.observation(seat), st.legal_actions(), seed).id)
    return st.actions


def arena_game(seed: int, number: int, actions: list[int], bot_ids: list[str],
               names: list[str]) -> dict[str, Any]:
    """The transcript as `workers.match` finishes a 3p arena game."""
    unit = f"b{number}"
    extra = {"match_id": f"m-a3p{unit}t0", "bot_ids": bot_ids,
             "clock": {"move_time_ms": 1000, "time_bank_ms": 10000}, "faults": [],
             "event": "arena:3p", "arena": "3p", "board": f"arena-3p/{unit}", "unit": unit,
             "duplicate": "boards", "notes": []}
    return transcript(Rules(), seed, actions, names, extra=extra)


def known_of(t: dict[str, Any]) -> dict[str, Any]:
    return {k: t[k] for k in ("match_id", "seed", "bot_ids", "board", "unit")}


def p95(values: list[int]) -> float:
    return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=200, help="games per table")
    args = parser.parse_args()

    random_bots, greedy_bots = [RandomPlayer()] * 3, [GreedyPlayer()] * 3
    house = {"random": ["house:random"] * 3, "greedy": ["house:greedy"] * 3}
    played = {
        "random": [play(random_bots, seed) for seed in range(args.games)],
        "greedy": [play(greedy_bots, seed) for seed in range(args.games)],
    }
    tables = {
        "random": [arena_game(s, s, a, house["random"], house["random"])
                   for s, a in enumerate(played["random"])],
        "greedy": [arena_game(s, s, a, house["greedy"], house["greedy"])
                   for s, a in enumerate(played["greedy"])],
        "greedy named": [arena_game(s, s, a, ["b-0a1b2c3d4e5f", "b-77aa88bb99cc",
                                              "b-123456abcdef"], ["alice", "bob-v2", "carol"])
                         for s, a in enumerate(played["greedy"])],
    }

    templates = set()
    for name, transcripts in tables.items():
        blobs, jsons, zipped, bounds, compact = [], [], [], [], 0
        encode_s = decode_s = 0.0
        for t in transcripts:
            known = known_of(t)
            text = json.dumps(t, separators=(",", ":"))
            start = _clock()
            packed = encode(t, known)
            mid = _clock()
            back = decode(packed.template, packed.blob, known)
            encode_s += mid - start
            decode_s += _clock() - mid
            assert json.dumps(back, separators=(",", ":")) == text
            templates.add(packed.template)
            blobs.append(len(packed.blob))
            jsons.append(len(text))
            zipped.append(len(zlib.compress(text.encode(), 9)))
            bounds.append(entropy_bits(t) / 8)
            compact += is_compact(packed.blob)
        print(f"{name} blob mean: {statistics.mean(blobs):.1f} bytes")
        print(f"{name} blob p95: {p95(blobs):.0f} bytes")
        print(f"{name} JSON transcript mean: {statistics.mean(jsons):.0f} bytes")
        print(f"{name} zlib JSON mean: {statistics.mean(zipped):.0f} bytes")
        print(f"{name} ratio JSON/blob: {statistics.mean(jsons) / statistics.mean(blobs):.0f} x")
        print(f"{name} entropy bound mean: {statistics.mean(bounds):.1f} bytes")
        print(f"{name} fast path: {100 * compact / len(transcripts):.0f} %")
        print(f"{name} encode: {len(transcripts) / encode_s:.0f} games/s")
        print(f"{name} decode: {len(transcripts) / decode_s:.0f} games/s")
    print(f"templates: {len(templates)} count")
    print(f"template: {max(len(t) for t in templates)} bytes")


if __name__ == "__main__":
    main()
