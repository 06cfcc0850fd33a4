"""The tests an author started, from the archive (ListTests by author, after a test has left
Redis): the events whose spec names that author, exactly, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from archive_backends import archive_url, postgres  # noqa: F401

from archive import mover, reads
from archive.db import Archive, open_archive
from server.archived import Archived
from store import ids
from store.refs import EventKind, EventRef


@pytest.fixture
def arc(archive_url: str) -> Iterator[Archive]:  # noqa: F811
    a = open_archive(archive_url)
    yield a
    a.close()


def _ended_test(arc: Archive, name: str, author: str = "", status: str = "finished") -> str:
    """An ended test written to the archive as the mover writes one; its id."""
    test_id = ids.new_test_id()
    spec: dict[str, Any] = {"test_id": test_id, "name": name, "plan": {}, "players": 3}
    if author:
        spec["author"] = author
    snapshot = {"hash": {"spec": json.dumps(spec, separators=(",", ":")), "name": name,
                         "status": status, "created_at": "1.0", "finished_at": "2.0"},
                **dict.fromkeys(("state", "rating")),
                **{k: [] for k in ("stream", "pairs", "redealt", "failed", "games",
                                   "released")}}
    mover.write_event(arc, EventRef.test(test_id), snapshot)
    return test_id


def test_an_author_s_archived_tests_are_those_their_spec_names(arc: Archive,
                                                               archive_url: str) -> None:  # noqa: F811
    a1 = _ended_test(arc, "first", "u-a_b")
    _ended_test(arc, "the admin's")
    _ended_test(arc, "a wildcard would take it", "u-aXb")  # `_` is a LIKE wildcard
    _ended_test(arc, 'a name that says "author":"u-a_b"', "u-other")
    a2 = _ended_test(arc, "second", "u-a_b", status="failed")
    _ended_test(arc, "a longer id", "u-a_bc")
    got = reads.events(arc, EventKind.TEST, author="u-a_b")
    assert [e.ref.id for e in got] == [a2, a1]  # newest first
    assert [e.ref.id for e in reads.events(arc, EventKind.TEST, author="u-a_b",
                                           status="finished")] == [a1]
    assert [e.ref.id for e in reads.events(arc, EventKind.TEST, author="u-a_b", limit=1)] \
        == [a2]
    assert [e.ref.id for e in reads.events(arc, EventKind.TEST, author="u-a_b",
                                           before=got[0].id)] == [a1]
    assert reads.events(arc, EventKind.TEST, author="u-nobody") == []
    assert len(reads.events(arc, EventKind.TEST)) == 6  # without an author: every one
    # The referee's reader passes the author on.
    archived = Archived(archive_url)
    try:
        assert [e.ref.id for e in archived.events(EventKind.TEST, author="u-a_b")] == [a2, a1]
    finally:
        archived.close()
