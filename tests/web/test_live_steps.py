"""The live game view's steps: WatchMatch's public events folded as the web pages do, checked
against the golden transcripts (every bid, contract, play and trick winner; no hidden tile)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clients.web.live import PublicGame, sse
from moon.contracts import parse_contract
from moon.tiles import Tile
from moon.transcript import read_jsonl
from proto.moon.v1 import game_pb2, match_pb2

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden").glob("*.jsonl"))
Ev = match_pb2.WatchMatchResponse


def _events(record: dict[str, Any]) -> list[Ev]:
    """The public events a watcher gets for a transcript's game, in order."""
    out = [Ev(match_started=Ev.MatchStarted(match=match_pb2.Match(
        players=record["players"], seat_names=record["seats"])))]
    for n, hand in enumerate(record["hands"], 1):
        for b in hand["bids"]:
            if b["bid"] == "pass":
                a = Ev.ActionTaken(seat=b["seat"], hand_number=n, kind=game_pb2.ACTION_KIND_PASS,
                                   action=game_pb2.Action(id=0))
            else:
                a = Ev.ActionTaken(seat=b["seat"], hand_number=n, kind=game_pb2.ACTION_KIND_BID,
                                   action=game_pb2.Action(id=b["bid"], bid=b["bid"]))
            out.append(Ev(action_taken=a))
        if hand["bidder"] is None:
            continue
        if hand["discard"] is not None:  # hidden: no action
            out.append(Ev(action_taken=Ev.ActionTaken(seat=hand["bidder"], hand_number=n,
                                                      kind=game_pb2.ACTION_KIND_DISCARD)))
        c = parse_contract(str(hand["trump"]))
        out.append(Ev(action_taken=Ev.ActionTaken(
            seat=hand["bidder"], hand_number=n, kind=game_pb2.ACTION_KIND_TRUMP,
            action=game_pb2.Action(id=30 + c, trump=c + 1))))
        for trick in hand["tricks"]:
            for p in trick["plays"]:
                t = Tile.parse(p["tile"])
                out.append(Ev(action_taken=Ev.ActionTaken(
                    seat=p["seat"], hand_number=n, kind=game_pb2.ACTION_KIND_PLAY,
                    action=game_pb2.Action(id=70 + t.index,
                                           tile=game_pb2.Tile(high=t.high, low=t.low)))))
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_live_steps_name_every_play_and_trick_winner_as_the_transcript(path: Path) -> None:
    for record in list(read_jsonl(path))[:5]:
        game = PublicGame()
        steps = [s for ev in _events(record) if (s := game.step(ev)) is not None]
        assert steps[0] == {"k": "started", "players": record["players"],
                            "seats": record["seats"]}
        plays = [s for s in steps if s["k"] == "play"]
        want = [(n, p["seat"], p["tile"]) for n, hand in enumerate(record["hands"], 1)
                for trick in hand["tricks"] for p in trick["plays"]]
        assert [(s["hand"], s["seat"], s["tile"]) for s in plays] == want
        winners = [s["winner"] for s in plays if s["winner"] is not None]
        assert winners == [trick["winner"] for hand in record["hands"]
                           for trick in hand["tricks"]]
        assert all("tile" not in s for s in steps if s["k"] == "discard")
        assert [s["trump"] for s in steps if s["k"] == "trump"] == \
            [h["trump"] for h in record["hands"] if h["bidder"] is not None]


def test_server_sent_events_are_framed_with_their_sequence() -> None:
    assert sse("state", '{"a":1}', 7) == 'id: 7\nevent: state\ndata: {"a":1}\n\n'
    assert sse("end", "{}") == "event: end\ndata: {}\n\n"
