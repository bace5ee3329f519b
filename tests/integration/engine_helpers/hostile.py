"""Module-level handlers for hostile tests (they must pickle for ``processes=N``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

from lagless.engine.record import Record


def hang(record: Record) -> None:
    """Never finishes in a test's lifetime."""
    time.sleep(600)


def fail(record: Record) -> None:
    raise RuntimeError(f"always fails at {record.offset}")


def die(record: Record) -> None:
    """The worker process dies without a word (as under the OOM killer)."""
    if record.offset == 3:
        os._exit(1)


def note_then_hang(record: Record) -> None:
    """Append the record's offset to ``$LAGLESS_TEST_LEDGER``, then never finish."""
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{record.offset}\n".encode())
    finally:
        os.close(fd)
    time.sleep(600)


def note_then_hang_on_the_poll_thread(records: Sequence[Record]) -> None:
    """A fast batch handler: appends its offsets to ``$LAGLESS_TEST_LEDGER`` at once, until
    it is called on the main thread (the poll thread of ``lagless consume``: see
    lagless.engine.inline): then it appends ``hang`` and the first offset, and never finishes."""
    hangs = threading.current_thread() is threading.main_thread()
    if hangs:
        line = f"hang {records[0].offset}\n".encode()
    else:
        line = b"".join(f"{r.offset}\n".encode() for r in records)
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    if hangs:
        time.sleep(600)
