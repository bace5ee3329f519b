"""A batch handler for the hang-on-the-poll-thread tests. Importing this module makes every
measured batch handler of the process count as fast (lagless.engine.workers.inline's threshold is
unit-tested): a loaded machine cannot keep the calls off the poll thread."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

from lagless.engine.record import Record
from lagless.engine.workers import inline

inline.INLINE_CALL_S = 10.0
inline.BUSY_SHARE = 0.0


def note_or_hang(line: bytes, hangs: bool) -> None:
    """Append ``line`` to ``$LAGLESS_TEST_LEDGER``; then, if ``hangs``, never return."""
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    if hangs:
        time.sleep(600)


def note_then_hang_on_the_poll_thread(records: Sequence[Record]) -> None:
    """A fast batch handler: appends its offsets to ``$LAGLESS_TEST_LEDGER`` at once, until
    it is called on the main thread (the poll thread of ``lagless consume``: see
    lagless.engine.workers.inline): then it appends ``hang`` and the first offset, and never
    finishes."""
    hangs = threading.current_thread() is threading.main_thread()
    if hangs:
        line = f"hang {records[0].offset}\n".encode()
    else:
        line = b"".join(f"{r.offset}\n".encode() for r in records)
    note_or_hang(line, hangs)
