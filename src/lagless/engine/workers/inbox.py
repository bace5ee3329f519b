"""The inbox: where workers (threads, processes' result threads, the event loop, the DLQ
producer's delivery callbacks) put what finished, and the poll loop takes it.

A :class:`queue.SimpleQueue` (its ``put`` and ``get_nowait`` are single C calls) with a
*bell*: a plain lock the poll loop waits on when the inbox is empty, released by a ``put``
that finds it held. Not :class:`queue.Queue`: its ``put`` and ``get`` run a few microseconds
of Python each under a mutex and a condition, and with hundreds of worker threads finishing
tasks of one record each (``bench/seed000.py``: 3,600 sleeps of 10-30 ms, 200 at once, ~9,000
tasks a second) a thread holding that mutex when the GIL passes to another stalls every thread
putting behind it.

Not ``SimpleQueue.get(timeout=...)`` either: on CPython 3.11 (measured on 3.11.7) that wait,
interrupted by a signal close to its deadline, computes a negative remaining time, which means
"wait forever". The poll loop waits a few milliseconds at a time whenever records are in
flight, so a Ctrl-C or SIGTERM could leave it waiting for good while every record in flight
hangs, the very case a second Ctrl-C is for. The bell is waited on with ``Lock.acquire``,
whose timed wait handles interruption correctly (``tests/unit/test_engine_inbox.py``).
"""

from __future__ import annotations

import threading
from contextlib import suppress
from queue import Empty, SimpleQueue
from typing import Protocol

__all__ = ["Empty", "Inbox", "Outbox", "new_inbox"]


class Outbox(Protocol):
    """The inbox as the workers see it (a :class:`queue.Queue` will do, in tests)."""

    def put(self, item: object) -> None: ...


class Inbox:
    """Many threads put, one thread (the poll loop) takes: ``get``, ``get_nowait`` and
    ``empty`` are the taker's alone."""

    __slots__ = ("_bell", "_get_nowait", "_items", "_locked", "_put", "_release")

    def __init__(self) -> None:
        self._items: SimpleQueue[object] = SimpleQueue()
        self._put = self._items.put
        self._get_nowait = self._items.get_nowait
        bell = threading.Lock()
        bell.acquire()  # held: no ring pending
        self._bell = bell
        self._locked = bell.locked
        self._release = bell.release

    def put(self, item: object) -> None:
        """Add ``item`` and ring the bell if the taker may be waiting (any thread)."""
        self._put(item)
        if self._locked():
            with suppress(RuntimeError):  # another put rang it in between
                self._release()

    def get_nowait(self) -> object:
        """The oldest item; raises :class:`queue.Empty` if there is none."""
        return self._get_nowait()

    def empty(self) -> bool:
        return self._items.empty()

    def qsize(self) -> int:
        return self._items.qsize()

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        """The oldest item, waiting up to ``timeout`` seconds (None: for good) for one if
        ``block``; raises :class:`queue.Empty` if none came. A wait may end early, empty (a
        ring left by items taken since): the caller waits again if it must."""
        items = self._items
        if not block or not items.empty():
            return self._get_nowait()
        bell = self._bell
        bell.acquire(False)  # a ring left from items taken without waiting
        if items.empty():  # an item put from here on rings the bell again
            if timeout is None:
                bell.acquire()
            elif timeout > 0:
                bell.acquire(True, timeout)
        return self._get_nowait()


def new_inbox() -> Inbox:
    """An empty inbox."""
    return Inbox()
