"""The list calls page through everything, newest (or oldest) first, and refuse bad tokens."""

from __future__ import annotations

import grpc
import pytest
from stack import Stack
from support import PoolBot

from clients.admin import Admin
from proto.moon.v1 import bot_pb2, bot_pb2_grpc, match_pb2, rating_pb2, tournament_pb2
from store import bots as store_bots
from store import keys


def _all_pages(call: object, request: object, field: str, size: int) -> list[object]:
    out: list[object] = []
    token = ""
    while True:
        request.page_size = size  # type: ignore[attr-defined]
        request.page_token = token  # type: ignore[attr-defined]
        resp = call(request, timeout=30)  # type: ignore[operator]
        items = list(getattr(resp, field))
        assert len(items) <= size
        out += items
        token = resp.next_page_token
        if not token:
            return out


def test_list_calls_page_and_refuse_bad_tokens(stack: Stack, pool: dict[str, PoolBot],
                                               admin: Admin) -> None:
    ids = [pool[k].bot_id for k in ("greedy1", "greedy2", "greedy3")]
    made = [admin.create_match(3, ids, seed=s, rules={"max_hands": "1"}).match_id
            for s in range(3)]
    admin.create_tournament(name="listing", players=3, format="round_robin", bot_ids=ids,
                            rules={"max_hands": "1"}, duplicate=False)

    matches = _all_pages(admin.matches.ListMatches, match_pb2.ListMatchesRequest(),
                         "matches", 2)
    listed = [m.match_id for m in matches]  # type: ignore[attr-defined]
    assert len(listed) == len(set(listed))
    assert listed.index(made[2]) < listed.index(made[1]) < listed.index(made[0])  # newest first

    # One bot's matches, from its own index, page by page: exactly its matches of the
    # whole listing (which may have grown at its front meanwhile: the tournament plays on).
    mine = [m.match_id for m in _all_pages(  # type: ignore[attr-defined]
        admin.matches.ListMatches, match_pb2.ListMatchesRequest(bot_id=ids[0]), "matches", 2)]
    after = _all_pages(admin.matches.ListMatches, match_pb2.ListMatchesRequest(), "matches", 50)
    theirs = [m.match_id for m in after if ids[0] in m.bot_ids]  # type: ignore[attr-defined]
    assert set(made) <= set(mine) and mine == theirs[len(theirs) - len(mine):]

    with grpc.insecure_channel(stack.address) as ch:
        bots = _all_pages(bot_pb2_grpc.BotServiceStub(ch).ListBots, bot_pb2.ListBotsRequest(),
                          "bots", 3)
    names = [b.name for b in bots]  # type: ignore[attr-defined]
    assert {pool[k].name for k in pool} <= set(names)
    assert len(names) == len(set(names))

    tours = _all_pages(admin.tournaments.ListTournaments,
                       tournament_pb2.ListTournamentsRequest(), "tournaments", 1)
    assert "listing" in [t.spec.name for t in tours]  # type: ignore[attr-defined]

    for bad in ("x", "-1"):
        with pytest.raises(grpc.RpcError) as err:
            admin.matches.ListMatches(match_pb2.ListMatchesRequest(page_token=bad), timeout=30)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "page_token" in (err.value.details() or "")


def test_list_filters_take_names_and_refuse_unknown_values(pool: dict[str, PoolBot],
                                                           admin: Admin) -> None:
    bot = pool["greedy1"]
    ids = [pool[k].bot_id for k in ("greedy1", "greedy2", "greedy3")]
    made = admin.create_match(3, ids, seed=5, rules={"max_hands": "1"}).match_id
    for who in (bot.bot_id, bot.name):  # a bot id or its name, as CreateMatch takes
        resp = admin.matches.ListMatches(match_pb2.ListMatchesRequest(bot_id=who), timeout=30)
        listed = [m.match_id for m in resp.matches]
        assert made in listed and all(bot.bot_id in m.bot_ids for m in resp.matches)
    bad_calls = {
        "bot_id": lambda: admin.matches.ListMatches(
            match_pb2.ListMatchesRequest(bot_id="no-such-bot"), timeout=30),
        "status": lambda: admin.tournaments.ListTournaments(
            tournament_pb2.ListTournamentsRequest(status=99), timeout=30),  # type: ignore[arg-type]
        "pool": lambda: admin.ratings.GetRatings(
            rating_pb2.GetRatingsRequest(pool=99), timeout=30),  # type: ignore[arg-type]
    }
    for field, call in bad_calls.items():
        with pytest.raises(grpc.RpcError) as err:
            call()
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field
        assert (err.value.details() or "").startswith(f"{field}:"), err.value.details()


def test_a_page_holds_at_most_a_thousand_whatever_it_asks(stack: Stack, admin: Admin,
                                                          name: str) -> None:
    """A page size of millions is served a thousand at a time: one call cannot make the
    referee read and send the whole store."""
    r = store_bots.connect(stack.redis_url)
    have = r.zcard(keys.BOTS)
    for i in range(max(0, 1001 - int(have))):
        store_bots.register_bot(r, f"{name}-{i}")
    r.close()
    with grpc.insecure_channel(stack.address) as ch:
        resp = bot_pb2_grpc.BotServiceStub(ch).ListBots(
            bot_pb2.ListBotsRequest(page_size=4_000_000_000), timeout=30)
    assert len(resp.bots) == 1000 and resp.next_page_token
