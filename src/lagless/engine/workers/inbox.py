"""The inbox: where workers (threads, processes' result threads, the event loop, the DLQ
producer's delivery callbacks) put what finished, and the poll loop takes it.

A :class:`queue.Queue`, not the faster :class:`queue.SimpleQueue`: on CPython 3.11 (measured
on 3.11.7) ``SimpleQueue.get(timeout=...)`` interrupted by a signal close to its deadline
computes a negative remaining time, which means "wait forever". The poll loop waits a few
milliseconds at a time whenever records are in flight, so a Ctrl-C or SIGTERM could leave it
waiting for good while every record in flight hangs — the very case a second Ctrl-C is for.
``Queue.get`` waits on a lock whose timed acquire handles interruption correctly. What
finishes is one task (many records), so the slower queue costs nothing measurable.
"""

from __future__ import annotations

from queue import Queue


def new_inbox() -> Queue[object]:
    """An empty inbox."""
    return Queue()
