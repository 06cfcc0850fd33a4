"""A page token stays right while items arrive (a real Redis): an item added between any
two commands of a page's read neither repeats an item nor skips one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from clients.redisproc import RedisServer
from store import bots
from store.errors import InvalidArgument
from store.matches import ids_after


class Busy(redis.Redis):
    """A client before each of whose commands another process adds a newer item."""

    added = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if args[0] != "ZADD":
            Busy.added += 1
            super().execute_command("ZADD", "ms:test:index", 1000 + Busy.added,
                                    f"new{Busy.added:03d}")
        return super().execute_command(*args, **options)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield srv.url


def test_items_added_meanwhile_neither_repeat_nor_skip(url: str) -> None:
    r = bots.connect(url)
    r.zadd("ms:test:index", {f"old{i:03d}": i for i in range(10)})
    busy = Busy.from_url(url, decode_responses=True)
    seen: list[str] = []
    token = ""
    for _ in range(10):  # 4 pages of 3 are enough
        page = [i for i in ids_after(busy, "ms:test:index", token, newest_first=True)
                if i.startswith("old")][:3]
        if not page:
            break
        seen += page
        token = page[-1]
    assert seen == [f"old{i:03d}" for i in range(9, -1, -1)]
    oldest_first = ids_after(busy, "ms:test:index", "old004", newest_first=False)
    assert oldest_first[:5] == [f"old{i:03d}" for i in range(5, 10)]
    with pytest.raises(InvalidArgument, match="page_token"):
        ids_after(r, "ms:test:index", "nope", newest_first=True)
