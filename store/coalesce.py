"""Many asks, one job: how a job that must run "again, after this" is asked for.

Every job that folds in what changed since its last run (an event's scheduling step,
a pool's rating fit) is asked for far more often than it needs to run: each game
recorded, each bot back online, each release asks. `Asks` makes them one:

- `ask` notes the request (the `dirty` key) and claims the queued marker (`queued`,
  SET NX with a TTL) in one transaction: only the ask that claims it queues a job, so
  a burst of asks queues one;
- the job, once it starts, drops the marker (`started`): asks from then on queue
  another job, since this one may already be past the point of seeing them; it then
  loops while `take` finds a request (under the job's own lock, so two jobs never run
  at once);
- a job that ends re-reads the request once it has let its lock go (`owed`): an ask
  whose job found the lock still held and gave up is taken up there;
- a marker whose job was lost (its worker died between taking and starting it) lapses
  after `queued_s`, and recovery, finding a request with no job queued or running
  (`owed`), queues one.

The same three keys and rules serve every such job; what a request carries besides
"look again" (the fit's list of tournaments) is its owner's.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

__all__ = ["Asks"]


@dataclass(frozen=True, slots=True)
class Asks:
    """The asks for one job: `dirty` holds a request, `queued` marks a job queued, `lock`
    is held while one runs."""

    dirty: str
    queued: str
    lock: str
    queued_s: int = 30

    def ask(self, r: redis.Redis) -> bool:
        """Ask for a run; True when this ask claimed the queued marker, so the caller
        queues the job (no job was queued)."""
        pipe = r.pipeline(transaction=True)
        pipe.set(self.dirty, 1)
        pipe.set(self.queued, 1, nx=True, ex=self.queued_s)
        return bool(pipe.execute()[-1])

    def ask_again(self, r: redis.Redis) -> None:
        """Note a request without queueing a job (a job or recovery takes it up)."""
        r.set(self.dirty, 1)

    def claim(self, r: redis.Redis) -> bool:
        """Mark a job as queued; False when one is already (queue none then)."""
        return bool(r.set(self.queued, 1, nx=True, ex=self.queued_s))

    def started(self, r: redis.Redis) -> None:
        """A job has started: asks from now on queue another."""
        r.delete(self.queued)

    def take(self, r: redis.Redis) -> bool:
        """Take the request (the running job looks now); True when there was one."""
        return bool(r.delete(self.dirty))

    def owed(self, r: redis.Redis) -> bool:
        """True when a request stands with no job queued or running to take it."""
        pipe = r.pipeline(transaction=False)
        pipe.exists(self.dirty)
        pipe.exists(self.queued)
        pipe.exists(self.lock)
        dirty, queued, locked = pipe.execute()
        return bool(dirty) and not queued and not locked
