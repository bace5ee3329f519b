"""A handler for subprocess tests: does the job (sleeps ``sleep_ms``), then appends the
record's id to the file named by ``$LAGLESS_TEST_LEDGER`` (one O_APPEND write a line, so it is
safe from several threads and processes and survives a SIGKILL of the writer).
``$LAGLESS_TEST_POISON`` names ids that always fail. :func:`handle_batch` is the batch form."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence

from lagless.engine.record import Record
from lagless.ids import ID_HEADER


def handle(record: Record) -> None:
    rid = record.header(ID_HEADER) or b"?"
    if rid.decode() in os.environ.get("LAGLESS_TEST_POISON", "").split(","):
        raise RuntimeError(f"poison record {rid.decode()}")
    doc = json.loads(record.value or b"{}")
    time.sleep(float(doc.get("sleep_ms", 0)) / 1000.0)
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, rid + b"\n")
    finally:
        os.close(fd)


def handle_batch(records: Sequence[Record]) -> None:
    """The batch form: does each job in turn, then appends the batch's ids in one write."""
    for record in records:
        rid = record.header(ID_HEADER) or b"?"
        if rid.decode() in os.environ.get("LAGLESS_TEST_POISON", "").split(","):
            raise RuntimeError(f"poison record {rid.decode()}")
        doc = json.loads(record.value or b"{}")
        time.sleep(float(doc.get("sleep_ms", 0)) / 1000.0)
    line = b"".join((r.header(ID_HEADER) or b"?") + b"\n" for r in records)
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


_LEDGER_FD: list[int] = []  # the ledger, opened once per process by handle_batch_fast


def handle_batch_fast(records: Sequence[Record]) -> None:
    """A fast batch form (no job, no decoding): the batch's ids in one write to a ledger kept
    open, so the call is short and busy (see lagless.engine.workers.inline)."""
    if not _LEDGER_FD:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        _LEDGER_FD.append(os.open(os.environ["LAGLESS_TEST_LEDGER"], flags, 0o644))
    os.write(_LEDGER_FD[0], b"".join((r.header(ID_HEADER) or b"?") + b"\n" for r in records))
