"""Module-level handlers for hostile tests (they must pickle for ``processes=N``)."""

from __future__ import annotations

import os
import time

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
