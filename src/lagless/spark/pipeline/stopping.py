"""Stopping the pipeline's streaming queries: after the batch in progress, and cleanly when a
batch has to be interrupted.

**After the batch in progress.** A stop request (``stop`` set, SIGTERM under the CLI, a first
Ctrl-C) lets the micro-batch in progress finish and commit before the query stops: its rows are
written once, and a restart does not read them again. ``stop_now`` set (a second signal under
the CLI, :mod:`lagless.signals`) stops at once.

**Interrupted batches end as stops, not as crashes.** ``StreamingQuery.stop()`` interrupts a
batch in progress; inside a Python ``foreachBatch`` the interruption surfaces as a Python
exception that Spark receives as text. Spark tells "stopped" from "failed" by matching that text
with a regular expression (``StreamExecution.PROXY_ERROR``: ``Py4JJavaError: An error occurred
while calling(.|\\r\\n|\\r|\\n)*`` followed by ``java.lang.InterruptedException`` or one of its
IO relatives) that recurses once per character: the few thousand characters of a Python
traceback around a JVM stack overflow the stream thread's stack — a ``StackOverflowError`` of
~1,000 lines on stderr, and the query's end is not recorded. :class:`StopAware` re-raises an
interruption as one short line that the expression matches. The interrupted batch was not
committed: it runs again, whole, at the next start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

POLL_S = 0.25
# Spark's StreamExecution.IO_EXCEPTION_NAMES (and InterruptedException): what it calls a stop
INTERRUPTIONS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
    "SPARK_JOB_CANCELLED",  # the batch's Spark job, cancelled by the stop
)


class BatchInterrupted(Exception):  # noqa: N818 (Spark matches this text, not the class)
    """A micro-batch interrupted by the query's stop, in the words Spark recognises as a stop."""

    def __init__(self, batch_id: int) -> None:
        super().__init__(
            "py4j.protocol.Py4JJavaError: An error occurred while calling foreachBatch: "
            f"{INTERRUPTIONS[0]} (micro-batch {batch_id} stopped; it runs again at the next start)"
        )


class StopAware:
    """Wraps a ``foreachBatch`` function: an exception raised while the query is stopping (or
    naming a JVM interruption) becomes :class:`BatchInterrupted`; any other failure goes on
    as raised."""

    def __init__(self, write: Callable[[DataFrame, int], None], stopping: threading.Event) -> None:
        self.write = write
        self.stopping = stopping

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self.write(df, batch_id)
        except Exception as exc:
            if self.stopping.is_set() or any(name in str(exc) for name in INTERRUPTIONS):
                log.info("micro-batch %d interrupted by the stop", batch_id)
                raise BatchInterrupted(batch_id) from None
            raise


def stop_queries(
    queries: Iterable[StreamingQuery], stopping: threading.Event, now: threading.Event | None
) -> None:
    """Stop each query after its batch in progress, or at once when ``now`` is set meanwhile.
    A Ctrl-C meanwhile also stops them at once, and is raised again once they stopped."""
    active = [q for q in queries if q.isActive]
    cut_short = False
    try:
        for q in active:
            batch = batch_in_progress(q)
            if batch is not None:
                log.info("stopping after micro-batch %d, in progress (Ctrl-C: stop now)", batch)
                while (now is None or not now.is_set()) and not finished(q, batch):
                    time.sleep(POLL_S)
    except KeyboardInterrupt:
        cut_short = True
    finally:
        if cut_short or (now is not None and now.is_set()):
            log.info("stopping now: the micro-batch in progress runs again at the next start")
        stopping.set()
        for q in active:
            if q.isActive:
                q.stop()  # a batch started meanwhile is interrupted: it runs again at next start
    if cut_short:
        raise KeyboardInterrupt


def trigger_active(query: StreamingQuery) -> bool:
    return query.isActive and bool(query.status.get("isTriggerActive"))


def last_batch(query: StreamingQuery) -> int:
    """The id of the last batch whose progress was reported (-1: none yet)."""
    last = query.lastProgress
    return -1 if last is None else int(last.batchId)


def batch_in_progress(query: StreamingQuery) -> int | None:
    """The id of the batch the query is running, if a trigger is active (with a backlog one
    batch follows another: the trigger never looks idle)."""
    return last_batch(query) + 1 if trigger_active(query) else None


def finished(query: StreamingQuery, batch: int) -> bool:
    """Whether ``batch`` ended (its progress was reported) or the query went idle / stopped."""
    return not trigger_active(query) or last_batch(query) >= batch
