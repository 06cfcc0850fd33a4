"""The package layout holds: each package imports only those above it, the gateway
imports no scheduler internals, pure packages stay pure, and no module imports form a
cycle (function-level imports included, so none can hide one)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("moon", "proto", "bots", "learn", "store", "archive", "tournaments", "ratings",
         "telemetry", "workers", "hosting", "server", "clients")
PURE_STORE = ("errors", "ids", "keys", "lua", "match_events", "messages", "pools",
              "rating_tables", "records", "refs", "results", "status")
# What the gateway may use of the workers: the enqueue functions, nothing that schedules.
SERVER_MAY_USE = {"workers.queues"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in ORDER:
        for path in (ROOT / pkg).rglob("*.py"):
            if "_pb2" in path.name:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth of the code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _project(name: str) -> str | None:
    """The project module an import names (longest match), if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


GRAPH = {mod: {p for i in _imports(path) if (p := _project(i)) and p != mod}
         for mod, path in MODULES.items()}


def _package(mod: str) -> str:
    return mod.split(".", maxsplit=1)[0]


def test_packages_import_only_those_above_them() -> None:
    bad = [(mod, dep) for mod, deps in GRAPH.items() for dep in deps
           if ORDER.index(_package(dep)) > ORDER.index(_package(mod))]
    assert not bad, bad


def test_the_gateway_uses_only_the_enqueue_functions_of_the_workers() -> None:
    bad = [(mod, dep) for mod, deps in GRAPH.items() if _package(mod) == "server"
           for dep in deps if _package(dep) == "workers" and dep not in SERVER_MAY_USE]
    assert not bad, bad


def test_pure_packages_do_no_io() -> None:
    io = ("redis", "rq", "grpc", "socket", "subprocess")
    pure = [m for m in MODULES if _package(m) in ("moon", "bots", "tournaments", "ratings")
            or (_package(m) == "store" and m.split(".")[-1] in PURE_STORE)]
    bad = [(m, i) for m in pure for i in _imports(MODULES[m]) if i.split(".")[0] in io]
    assert not bad, bad


def test_bots_use_nothing_of_the_project_but_the_engine() -> None:
    # Players are pure: the SDK and the house-bot runner both call them, so they may
    # know the game and nothing of Redis records, the wire or the gateway.
    bad = [(mod, dep) for mod, deps in GRAPH.items() if _package(mod) == "bots"
           for dep in deps if _package(dep) not in ("bots", "moon")]
    assert not bad, bad


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for dep in sorted(GRAPH[mod]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep):], dep] if dep in path else [mod, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[mod] = 2

    for mod in sorted(GRAPH):
        if mod not in state:
            visit(mod, [mod])
    assert not cycles, cycles


# store/ owns every read and write of the project's data in Redis. Outside it, only RQ's
# own records (its queues, registries and workers) are touched directly, by RQ's users.
RQ_ONLY = {"workers.worker", "workers.intake", "workers.exporter", "workers.queues"}
REDIS_COMMANDS = {
    "blpop", "delete", "eval", "evalsha", "execute", "exists", "expire", "get", "hdel",
    "hexists", "hget", "hgetall", "hincrby", "hkeys", "hmget", "hset", "hsetnx", "incr",
    "lindex", "llen", "lpop", "lpos", "lpush", "lrange", "pexpire", "pipeline", "pttl",
    "publish", "rpush", "sadd", "scard", "set", "sismember", "smembers", "spop", "srem",
    "time", "xadd", "xrange", "xread", "xrevrange", "zadd", "zcard", "zcount", "zrange",
    "zrangebyscore", "zrank", "zrem", "zremrangebyscore", "zrevrange", "zrevrank",
}
CLIENTS = {"r", "ar", "rq_conn", "conn", "pipe", "client"}  # names a Redis client goes by


def _raw_redis_calls(path: Path) -> list[str]:
    """`r.hset(...)`-style calls (on a client by one of its usual names) in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in REDIS_COMMANDS):
            continue
        on = node.func.value
        name = on.attr if isinstance(on, ast.Attribute) else getattr(on, "id", "")
        if name in CLIENTS:
            found.append(f"{path.name}:{node.lineno} {name}.{node.func.attr}")
    return found


def test_store_owns_every_read_and_write_of_the_workers_and_the_gateway() -> None:
    bad = [call for mod, path in MODULES.items()
           if _package(mod) in ("workers", "hosting", "server") and mod not in RQ_ONLY
           for call in _raw_redis_calls(path)]
    assert not bad, bad
    # ... and they name no key: a key and what it holds are the store's business.
    naming = [mod for mod, deps in GRAPH.items()
              if (_package(mod) in ("workers", "hosting") or mod == "server.hub")
              and "store.keys" in deps]
    assert not naming, naming



def test_rating_methods_and_formats_use_only_the_pure_parts_of_the_store() -> None:
    bad = [(mod, dep) for mod, deps in GRAPH.items()
           if _package(mod) in ("tournaments", "ratings") for dep in deps
           if _package(dep) == "store" and dep.split(".")[-1] not in PURE_STORE]
    assert not bad, bad


def test_one_module_writes_what_reaches_a_bot() -> None:
    """A bot's channel is written by store.runs (a match run's requests and events, fenced)
    and store.streams (the hubs' announcements of a new stream) only."""
    naming = sorted(mod for mod, path in MODULES.items()
                    if "keys.events(" in path.read_text() or "keys.inbox(" in path.read_text())
    assert naming == ["store.runs", "store.streams"], naming
