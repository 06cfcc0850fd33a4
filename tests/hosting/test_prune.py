"""A host removes the unpacked versions nobody has started for a while, and the leftovers
of unpacks cut short, but never a version a sandbox runs or one started lately."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from archive.db import open_archive
from clients.redisproc import RedisServer
from hosting.host import Host, Running
from store import bots


def _version(root: Path, digest: str, age_s: float) -> Path:
    folder = root / "versions" / digest
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "bot.py").write_text("print('hi')\n")
    os.chmod(folder / "lib", 0o555)  # unpacked versions are read-only, folders and all
    os.chmod(folder, 0o555)
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_unused_unpacked_versions_and_stale_leftovers_leave_the_disk(
        redis_server: RedisServer, tmp_path: Path) -> None:
    arc = open_archive(f"sqlite:///{tmp_path / 'archive.sqlite3'}")
    data = tmp_path / "host"
    host = Host(bots.connect(redis_server.url), bots.connect(redis_server.url), arc,
                "127.0.0.1:1", "h1", data, keep_unpacked_s=3600.0)
    old = _version(data, "a" * 64, 7200)  # unused for two hours: goes
    recent = _version(data, "b" * 64, 60)  # started a minute ago: stays
    running = _version(data, "c" * 64, 7200)  # old, but a sandbox runs it: stays
    host.running["b-x"] = cast(Running, SimpleNamespace(version=SimpleNamespace(
        digest="c" * 64)))
    stale = data / "versions" / ".unpack-old"
    (stale / "v").mkdir(parents=True)
    fresh = data / "versions" / ".unpack-now"  # an unpack under way: left alone
    fresh.mkdir()
    then = time.time() - 7200
    os.utime(stale, (then, then))
    removed = host.prune_unpacked()
    assert removed == ["a" * 64]
    assert not old.exists() and recent.is_dir() and running.is_dir()
    assert not stale.exists() and fresh.is_dir()
    assert sorted(p.name for p in (data / "versions").iterdir()) == sorted(
        [".unpack-now", "b" * 64, "c" * 64])  # nothing of the removal left behind
    # Using a version marks it used: an old folder started again is kept.
    host.running.clear()
    before = running.stat().st_mtime
    version: Any = SimpleNamespace(digest="c" * 64)
    assert host.unpacked(version) == running and running.stat().st_mtime > before
    assert host.prune_unpacked() == []
    arc.close()
