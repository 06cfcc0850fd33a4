"""Following a tournament from the command line: a progress bar of the games played and in
play, then the final standings.

The bar counts games played (finished), which everyone may know: a game's status is
public, its result is not until every table of its board has finished. Organisers
(the admin token) follow the organiser's event stream, where each result comes as
it is recorded; anyone else follows the public stream, where results come a board
at a time, and is told so once. Games in play are those announced started and not
yet finished. A tournament already over is not replayed: its result comes at once.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any

import grpc

from clients.admin import Admin
from clients.parser import CommandError
from clients.progress import Progress
from proto.moon.v1 import tournament_pb2

__all__ = ["HIDDEN_NOTE", "follow"]

HIDDEN_NOTE = ("without the admin token, results are public a board at a time: a game's "
               "result shows once every table of its board has finished, so that nobody "
               "learns a deal another table is still playing")
_RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING
_FAILED = tournament_pb2.TOURNAMENT_STATUS_FAILED
_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
              grpc.StatusCode.CANCELLED)
_MAX_FAILURES = 30  # transient errors in a row (a referee restarting) before giving up


class _Reader(threading.Thread):
    """Reads a tournament's events into a queue, resuming after the last one on a dropped
    stream; puts the error that ends it, or None at the stream's end."""

    def __init__(self, admin: Admin, tournament_id: str, organiser: bool,
                 out: queue.Queue[Any]) -> None:
        super().__init__(daemon=True, name=f"watch {tournament_id}")
        self.admin, self.tid, self.organiser, self.out = admin, tournament_id, organiser, out
        self.stopping = threading.Event()
        self.call: Any = None

    def run(self) -> None:
        after = failures = 0
        while not self.stopping.is_set():
            try:
                self.call = self.admin.watch_call(self.tid, after, self.organiser)
                for ev in self.call:
                    after, failures = ev.sequence, 0
                    self.out.put(ev)
                self.out.put(None)
                return
            except grpc.RpcError as exc:
                if self.stopping.is_set():
                    return
                code = exc.code() if hasattr(exc, "code") else None
                if code not in _TRANSIENT or failures >= _MAX_FAILURES:
                    self.out.put(exc)
                    return
                failures += 1
                time.sleep(min(0.2 * 2 ** failures, 5.0))

    def stop(self) -> None:
        """End the stream (from another thread)."""
        self.stopping.set()
        if self.call is not None:
            self.call.cancel()


def _tournament(admin: Admin, tournament_id: str, failures: list[int]
                ) -> tournament_pb2.Tournament | None:
    """GetTournament, None on a transient error (up to _MAX_FAILURES in a row)."""
    try:
        t = admin.get_tournament(tournament_id)
    except grpc.RpcError as exc:
        code = exc.code() if hasattr(exc, "code") else None
        failures[0] += 1
        if code not in _TRANSIENT or failures[0] > _MAX_FAILURES:
            raise
        return None
    failures[0] = 0
    return t


def _drain(events: queue.Queue[Any], wait_s: float) -> list[Any]:
    """Whatever is queued, waiting up to `wait_s` for the first item."""
    try:
        batch = [events.get(timeout=wait_s)]
    except queue.Empty:
        return []
    while True:
        try:
            batch.append(events.get_nowait())
        except queue.Empty:
            return batch


def follow(admin: Admin, tournament_id: str, label: str = "", quiet: bool = False,
           organiser: bool = False, poll_s: float = 1.0) -> tournament_pb2.Standings:
    """Follow a tournament to its end with a progress bar (none if `quiet`); return the
    final standings (CommandError if it failed). `organiser`: the caller has the admin
    token, so results count as they are recorded."""
    t = admin.get_tournament(tournament_id)
    if t.status == _RUNNING:
        _follow_running(admin, t, label or t.spec.name, quiet, organiser, poll_s)
        t = admin.get_tournament(tournament_id)
    if t.status == _FAILED:
        raise CommandError(f"tournament {tournament_id} failed: {t.error}")
    return admin.standings(tournament_id, organiser)


def _follow_running(admin: Admin, t: tournament_pb2.Tournament, label: str, quiet: bool,
                    organiser: bool, poll_s: float) -> None:
    tid = t.tournament_id
    events: queue.Queue[Any] = queue.Queue()
    reader = _Reader(admin, tid, organiser, events)
    reader.start()
    bar = Progress(max(t.matches_total, 1), label, unit="games played",
                   enabled=False if quiet else None, plain=not quiet)
    if not organiser and not quiet:
        print(f"note: {HIDDEN_NOTE}", file=sys.stderr, flush=True)
    bar.begin(t.matches_done)
    started: set[str] = set()
    public = 0  # results the stream has given (without the token: released games)
    over = False
    failures = [0]
    polled = 0.0
    shown = False
    try:
        while not over:
            batch = _drain(events, poll_s)
            for ev in batch:
                if isinstance(ev, Exception):
                    raise ev
                kind = None if ev is None else ev.WhichOneof("event")
                if ev is None or kind == "tournament_finished":
                    over = True
                elif kind == "match_started":
                    started.add(ev.match_started.match_id)
                elif kind == "match_finished":
                    public = max(public, ev.match_finished.matches_done)
            if over or time.monotonic() - polled >= poll_s:
                polled = time.monotonic()
                fresh = _tournament(admin, tid, failures)
                if fresh is not None:
                    t = fresh
                    over = over or t.status != _RUNNING
            played = t.matches_done
            note = f"{max(0, len(started) - played)} in play"
            if not organiser:
                note += f", {public} public"
            bar.update(played, total=max(t.matches_total, played, 1), note=note)
            if not shown and not events.qsize():  # caught up with the events so far
                bar.show(note)
                shown = True
    finally:
        reader.stop()
    bar.close()
