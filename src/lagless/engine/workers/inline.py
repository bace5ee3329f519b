"""Fast batches on the poll thread: when a batch handler's call is not worth a thread.

Handing a batch to a worker thread costs the poll loop more than the batch itself when the
handler is fast: a queue hand-off, a thread woken, the GIL passed to it and taken back, a
completion through the inbox. With a ``noop`` handler and batches of 500 that was about a
third of the engine's time (``bench/throughput.py``: ~270 µs a batch). A thread buys nothing
for such a call: it is over before another thread could have done anything beside it.

So :class:`lagless.engine.workers.threads.ThreadWorkers` runs a batch's *first call* on the poll
thread itself while the handler is measured fast and busy (:class:`InlinePace`): its calls
take under :data:`INLINE_CALL_S` on average, and at least half of that time is the calling
thread's own CPU time. A handler that waits (I/O, sleeps, locks: its thread's CPU time is
a small part of the call) keeps the worker threads however short its calls, since there
threads run calls side by side. Every call, wherever it ran, is measured, so a handler that
slows down goes back to the threads, and one that speeds up comes to the poll thread; the
first batches always go to the threads (nothing is known yet).

Only the first call runs there: if it does not settle the batch (it raised or named failed
records), the rest of the rule (:mod:`lagless.engine.workers.batch`: retries with their backoff,
the split) goes on on a worker thread, in the partition's lane, as if it had started there.
Ordering, commits, retries and the DLQ are unchanged; the poll loop is held only for calls
measured shorter than :data:`INLINE_CALL_S` on average (an unusually long one holds it for its
own length). ``EngineConfig(inline=False)`` (``--no-inline``) keeps every call on the worker
threads. Per-record handlers, processes and ``async def`` handlers are not affected.
"""

from __future__ import annotations

INLINE_CALL_S = 0.0002  # a batch call shorter than this on average may run on the poll thread
BUSY_SHARE = 0.5  # ... if at least this share of it is the calling thread's CPU time
WEIGHT = 0.2  # of the newest call in the moving averages


class InlinePace:
    """Moving averages of a batch handler's calls: wall time and the calling thread's CPU
    time. Written by the poll thread and the worker threads alike (a lost update only delays
    a switch by a call)."""

    __slots__ = ("cpu_s", "wall_s")

    def __init__(self) -> None:
        self.wall_s: float | None = None  # None: no call measured yet
        self.cpu_s = 0.0

    def note(self, wall_s: float, cpu_s: float) -> None:
        """A task's calls took ``wall_s`` (and ``cpu_s`` of its thread's CPU time)."""
        if self.wall_s is None:
            self.wall_s, self.cpu_s = wall_s, cpu_s
            return
        self.wall_s += WEIGHT * (wall_s - self.wall_s)
        self.cpu_s += WEIGHT * (cpu_s - self.cpu_s)

    @property
    def fast(self) -> bool:
        """Whether the next batch's first call should run on the calling thread."""
        wall = self.wall_s
        return wall is not None and wall < INLINE_CALL_S and self.cpu_s >= BUSY_SHARE * wall
