"""The referee's hot path on its own Redis client (`server.resp`) against redis-py's asyncio
client (with the hiredis parser), in the same run.

Run `nice -n 15 python bench/resp_client.py [--trips N] [--rounds R]`. It starts a
private redis-server and, in turns, a referee stand-in on each client; a driver
process plays the match job. One round trip is what every decision costs the
referee: the driver stores a request of a typical decision's size as pending and
publishes it (FENCED_SEND_LUA, as the match job does), the stand-in gets it on its
pub/sub connection, reads its request id from the JSON and answers with the ACCEPT
script on its command connection (`store.streams.accept_args`), and the driver's
BLPOP returns the answer. The stand-ins differ only in the client:

- `resp`: two `server.resp.RespConnection`s, the message handed to a callback as it
  is parsed (the hub's way);
- `redis-py`: `redis.asyncio` with hiredis, a PubSub read in a loop and
  `evalsha` on a second client with a connection of its own.

Printed, `name: value unit`, for each client: `... p50/p99` (the round trip as the
driver times it, us) and `... cpu per trip` (the stand-in's CPU per round trip, us:
what the referee would spend), then `cpu ratio redis-py/resp`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLIENTS = ("resp", "redis-py")
BOT = "b-0123456789ab"
MATCH = "m-0123456789ab"


def _request(seq: int, size: int) -> str:
    """A request JSON of about `size` bytes with its id first."""
    body = json.dumps({"request_id": f"{MATCH}/{seq}", "pad": "x" * size})
    return body


# ------------------------------------------------------------------ stand-ins


async def _serve_resp(url: str, trips: int) -> float:
    from server.resp import RespConnection
    from store import keys, streams
    from store.lua import ACCEPT_LUA

    cmd = await RespConnection.open(url)
    loaded = await cmd.call("SCRIPT", "LOAD", ACCEPT_LUA)
    sha = loaded.decode() if isinstance(loaded, bytes) else str(loaded)
    done = asyncio.Event()
    count = 0
    start = 0.0

    def on_message(channel: bytes, data: bytes) -> None:
        nonlocal count, start
        rid = json.loads(data)["request_id"]
        k, argv = streams.accept_args(BOT, rid, 70)
        cmd.send("EVALSHA", sha, 2, *k, *argv)
        count += 1
        if count == 1:
            start = time.process_time()
        if count == trips:
            done.set()

    sub = await RespConnection.open(url, on_message=on_message)
    await sub.call("SUBSCRIBE", keys.events(BOT))
    print("ready", flush=True)
    await done.wait()
    used = time.process_time() - start
    await cmd.call("PING")  # the last answer has gone out
    sub.close()
    cmd.close()
    return used


async def _serve_redis_py(url: str, trips: int) -> float:
    import redis.asyncio as aioredis

    from store import keys, streams
    from store.lua import ACCEPT_LUA

    cmd = aioredis.Redis.from_url(url, single_connection_client=True)
    sha = await cmd.script_load(ACCEPT_LUA)
    subscriber = aioredis.Redis.from_url(url)
    pubsub = subscriber.pubsub()
    await pubsub.subscribe(keys.events(BOT))
    print("ready", flush=True)
    count = 0
    start = 0.0
    async for msg in pubsub.listen():
        if msg["type"] != "message":
            continue
        rid = json.loads(msg["data"])["request_id"]
        k, argv = streams.accept_args(BOT, rid, 70)
        await cmd.evalsha(sha, 2, *k, *argv)
        count += 1
        if count == 1:
            start = time.process_time()
        if count == trips:
            break
    used = time.process_time() - start
    await pubsub.aclose()
    await subscriber.aclose()
    await cmd.aclose()
    return used


def serve(url: str, client: str, trips: int) -> None:
    """The referee stand-in: answer `trips` requests, print its CPU seconds per trip."""
    run: Callable[[str, int], object] = _serve_resp if client == "resp" else _serve_redis_py
    used = asyncio.run(run(url, trips))  # type: ignore[arg-type]
    print(json.dumps({"cpu_per_trip_us": used * 1e6 / max(1, trips - 1)}), flush=True)


# --------------------------------------------------------------------- driver


def drive(url: str, trips: int, size: int) -> list[float]:
    """Play the match job: send a request, wait for its answer; round trips in us."""
    import redis

    from store import keys
    from store.lua import FENCED_SEND_LUA

    r = redis.Redis.from_url(url)
    r.set(keys.lease(MATCH), "run", px=600_000)
    send = r.register_script(FENCED_SEND_LUA)
    out = []
    for seq in range(trips):
        payload = _request(seq, size)
        t = time.perf_counter()
        send(keys=[keys.lease(MATCH), keys.match_log(MATCH), keys.pending(BOT)],
             args=["run", 600_000, "", f"{MATCH}/{seq}", payload, keys.events(BOT)])
        got = r.blpop([keys.replies(MATCH)], timeout=10)
        if got is None:
            raise RuntimeError(f"no answer to request {seq}")
        out.append((time.perf_counter() - t) * 1e6)
    r.delete(keys.lease(MATCH), keys.match_log(MATCH))
    return out


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def main() -> int:
    """Start Redis; alternate the clients for `--rounds` rounds; print the figures."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    p.add_argument("--trips", type=int, default=2000, help="round trips per round and client")
    p.add_argument("--rounds", type=int, default=3, help="turns of each client (default 3)")
    p.add_argument("--size", type=int, default=760, help="request JSON bytes (default 760)")
    p.add_argument("--role", default="bench", choices=("bench", *CLIENTS),
                   help=argparse.SUPPRESS)
    p.add_argument("--url", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role != "bench":
        serve(args.url, args.role, args.trips)
        return 0
    from clients.redisproc import RedisServer

    rtts: dict[str, list[float]] = {c: [] for c in CLIENTS}
    cpu: dict[str, list[float]] = {c: [] for c in CLIENTS}
    with tempfile.TemporaryDirectory() as tmp, \
            RedisServer(Path(tmp) / "redis", appendonly=False) as srv:
        for _ in range(args.rounds):
            for client in CLIENTS:
                stand_in = subprocess.Popen(
                    [sys.executable, __file__, "--role", client, "--url", srv.url,
                     "--trips", str(args.trips)], stdout=subprocess.PIPE, text=True)
                assert stand_in.stdout is not None
                assert stand_in.stdout.readline().strip() == "ready"
                rtts[client] += drive(srv.url, args.trips, args.size)[args.trips // 10:]
                out, _ = stand_in.communicate(timeout=60)
                cpu[client].append(json.loads(out.strip().splitlines()[-1])["cpu_per_trip_us"])
    for client in CLIENTS:
        print(f"{client} p50: {_pct(rtts[client], 0.5):.0f} us")
        print(f"{client} p99: {_pct(rtts[client], 0.99):.0f} us")
        print(f"{client} cpu per trip: {statistics.median(cpu[client]):.0f} us")
    ratio = statistics.median(cpu["redis-py"]) / statistics.median(cpu["resp"])
    print(f"cpu ratio redis-py/resp: {ratio:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
