"""The one watch loop: numbered events after a sequence, polled, until the last.

WatchTournament, WatchTest and WatchMatch all follow something that grows by numbered
events and ends with a last one: an event's stream (`store.events`), whose end event is
written in the same atomic step as the event's status (`store.steps.save`), or a
match's log, whose end is its status. Each gives `follow` how to read what came after a
sequence, which item is the last, and how to ask whether the source is over; `follow`
does the rest the same way for all three:

- it polls (a non-blocking read every `poll_s`): a watcher holds no Redis connection
  while it waits, so watchers cannot use up the connections other calls need;
- it yields each item once, in order, in the batches its reads found, and stops after
  the last;
- when a read finds nothing new and the source says it is over, it reads once more
  before it stops: the end is written with the status, so that read has it, and a
  watcher never stops one event short (no grace poll, no guess at write order).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

__all__ = ["follow"]

T = TypeVar("T")


async def follow(read: Callable[[int], Awaitable[Sequence[tuple[int, T]]]], after: int,
                 last: Callable[[T], bool], over: Callable[[], Awaitable[bool]],
                 poll_s: float) -> AsyncIterator[list[tuple[int, T]]]:
    """Batches of (sequence, item), every item after sequence `after` once and in order, as
    they come, until one is `last` (the batch ends with it), or until nothing more comes
    from a source that is `over`. A batch is what one read found: a caller that renders a
    view per batch renders one for a burst of events, not one per event."""
    while True:
        batch = list(await read(after))
        if not batch:
            if not await over():
                await asyncio.sleep(poll_s)
                continue
            batch = list(await read(after))  # anything written with the end is there now
            if not batch:
                return
        end = next((i for i, (_, item) in enumerate(batch) if last(item)), None)
        if end is not None:
            yield batch[:end + 1]
            return
        yield batch
        after = batch[-1][0]
