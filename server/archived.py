"""The referee's read access to the archive: finished games that have left Redis.

Readers look in Redis first (a game under way, or finished and not archived yet) and
then here, so a game is served from wherever it is, and from Redis when a crash left it
in both. The archive is opened on first use (a referee starts and serves live games
with its database away); its errors become UNAVAILABLE at the edge (`server.edge`).
These calls block: servicers run them on a lane's threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError

from archive import reads
from archive.db import Archive, open_archive
from archive.errors import ArchiveError, Unavailable
from store.matches import MatchRecord
from store.pools import Pool
from store.refs import EventKind, EventRef
from store.status import TournamentStatus
from store.tournaments import TournamentInfo

__all__ = ["BACKOFF_S", "COUNT_TTL_S", "ROWS_KEPT", "Archived", "info_of"]

BACKOFF_S = 5.0  # after a failed call, calls fail at once this long (no thread waits)
COUNT_TTL_S = 5.0  # a pool's archived game count is read again after this long
ROWS_KEPT = 16  # archived events whose standings rows a referee keeps in memory ...
ROWS_MAX = 20_000  # ... of up to this many games each

_T = TypeVar("_T")


@dataclass
class Archived:
    """The archive at `url` ('' : the stack has none, and nothing is archived)."""

    url: str
    pool_size: int = 8
    _archive: Archive | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _down_until: float = field(default=0.0, init=False, repr=False)
    _counts: dict[Pool, tuple[float, int]] = field(default_factory=dict, init=False,
                                                   repr=False)
    _rows: OrderedDict[EventRef, dict[str, dict[str, Any]]] = field(
        default_factory=OrderedDict, init=False, repr=False)

    def archive(self) -> Archive | None:
        """The open archive (opened now if need be); None for a stack without one.
        Unavailable, at once, for a while after the archive failed a call: a database
        away costs each reader nothing, not a connect timeout each."""
        if not self.url:
            return None
        if time.monotonic() < self._down_until:
            raise Unavailable("the archive is unavailable (it failed a moment ago; asked "
                              "again in a few seconds)")
        with self._lock:
            if self._archive is None:
                self._archive = self._guard(
                    lambda: open_archive(self.url, pool_size=self.pool_size))
            return self._archive

    def _guard(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except (ArchiveError, SQLAlchemyError, OSError):
            self._down_until = time.monotonic() + BACKOFF_S
            raise

    def match(self, match_id: str) -> MatchRecord | None:
        """An archived game with its transcript; None when it is not archived."""
        a = self.archive()
        found = None if a is None else self._guard(lambda: reads.game(a, match_id))
        return None if found is None else reads.to_record(found)

    def matches(self, *, bot_id: str = "", event: EventRef | None = None,
                players: int | None = None, before: int | None = None, limit: int = 50,
                since: float | None = None, until: float | None = None
                ) -> list[tuple[int, MatchRecord]]:
        """Archived games newest first, without transcripts: (archive id, record)."""
        a = self.archive()
        if a is None:
            return []
        found = self._guard(lambda: reads.games(
            a, bot_id=bot_id, event=event, players=players, before=before, limit=limit,
            since=since, until=until))
        out = []
        for g in found:
            if not g.shared:  # stored whole (the codec's fallback): its blob has it all
                full = reads.game(a, g.match_id)
                if full is not None:
                    out.append((g.id, _without_transcript(full)))
            else:
                out.append((g.id, reads.to_record(g, with_transcript=False)))
        return out

    def event(self, ref: EventRef) -> reads.ArchivedEvent | None:
        """An ended tournament or test the archive holds whole; None otherwise."""
        a = self.archive()
        return None if a is None else self._guard(lambda: reads.event(a, ref))

    def events(self, kind: EventKind, before: int | None = None, limit: int = 50,
               status: str = "", author: str = "") -> list[reads.ArchivedEvent]:
        """Ended events of a kind, newest first (only `author`'s, given an author id)."""
        a = self.archive()
        return [] if a is None else self._guard(lambda: reads.events(
            a, kind, before=before, limit=limit, status=status, author=author))

    def event_rows(self, ref: EventRef) -> dict[str, dict[str, Any]]:
        """An archived (ended) event's results (standings rows) by match id, in archive
        order. Kept for the last few events asked for: an archived event never changes,
        and its standings are asked for on every page view and watch."""
        with self._lock:
            found = self._rows.get(ref)
            if found is not None:
                self._rows.move_to_end(ref)
                return found
        a = self.archive()
        rows = {} if a is None else {row["match_id"]: row
                                     for row in self._guard(lambda: reads.event_rows(a, ref))}
        if len(rows) <= ROWS_MAX:  # (a larger one is read each time: memory is bounded)
            with self._lock:
                self._rows[ref] = rows
                while len(self._rows) > ROWS_KEPT:
                    self._rows.popitem(last=False)
        return rows

    def rated_games(self, pool: Pool) -> int:
        """How many rated games of a pool the archive holds (read again after a few
        seconds: a count over a season's games is not free)."""
        now = time.monotonic()
        cached = self._counts.get(pool)
        if cached is not None and now - cached[0] < COUNT_TTL_S:
            return cached[1]
        a = self.archive()
        n = 0 if a is None else self._guard(lambda: reads.count(a, pool, rated=True))
        self._counts[pool] = (now, n)
        return n

    def close(self) -> None:
        """Close the archive's connections."""
        with self._lock:
            if self._archive is not None:
                self._archive.close()
                self._archive = None


def _without_transcript(g: reads.ArchivedGame) -> MatchRecord:
    rec = reads.to_record(g)
    return MatchRecord(rec.spec, rec.status, rec.created_at, rec.started_at, rec.finished_at,
                       rec.actions, rec.error, rec.result, None, rec.released)


def info_of(e: reads.ArchivedEvent) -> TournamentInfo:
    """An archived tournament's or test's status as `store.tournaments.info` gives it."""
    i = e.summary.get("info") or {}
    return TournamentInfo(status=TournamentStatus(e.status), created_at=e.created_at,
                          finished_at=e.finished_at, done=int(i.get("done") or 0),
                          total=int(i.get("total") or 0), error=str(i.get("error") or ""),
                          redealt=int(e.summary.get("redealt") or 0))
