"""A batch handler for ``--processes`` tests that mutates the list it is given: it writes the
batch's ids to ``$LAGLESS_TEST_LEDGER`` (see :mod:`.ledger`), popping each record off its list;
on a ``$LAGLESS_TEST_POISON`` id it clears the list and raises."""

from __future__ import annotations

import os
from collections.abc import MutableSequence

from lagless.engine.record import Record
from lagless.ids import ID_HEADER


def handle_batch(records: MutableSequence[Record]) -> None:
    poison = os.environ.get("LAGLESS_TEST_POISON", "")
    if any((r.header(ID_HEADER) or b"").decode() == poison for r in records):
        records.clear()
        raise RuntimeError(f"poison record {poison}")
    ids = []
    while records:
        ids.append(records.pop(0).header(ID_HEADER) or b"?")
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"".join(i + b"\n" for i in ids))
    finally:
        os.close(fd)
