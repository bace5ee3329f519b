"""The ledger: one line per record an engine finished, for audits by id (``--ledger FILE``).

Tab-separated, one record a line, written by the poll thread as records finish and flushed
before every commit (so every committed record is in the ledger; a record in the ledger may
still be re-run after a crash — at-least-once)::

    topic  partition  offset  id  ts_ms  done_ms  outcome

``id`` is the record's ``lagless-id`` header (empty when absent, or when its headers cannot be
read: a header name that is not UTF-8), ``ts_ms`` its timestamp
(producer create time), ``done_ms`` when its handler finished (wall clock, ms), ``outcome`` one
of ``ok``, ``dlq``, ``skipped`` (failed every attempt, skipped by ``--on-failure skip``).
Records skipped because an earlier run had completed them are not written: they did not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lagless.engine.record import Record
from lagless.errors import LaglessError
from lagless.ids import ID_HEADER
from lagless.kafka.records import HeaderNameError


@dataclass(frozen=True, slots=True)
class LedgerLine:
    topic: str
    partition: int
    offset: int
    id: str
    ts_ms: float
    done_ms: float
    outcome: str


class Ledger:
    """Writes the ledger of one engine run (poll thread only)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: IO[str] = path.open("w", encoding="utf-8", buffering=1 << 16)

    def write(self, record: Record, outcome: str, done_s: float) -> None:
        try:
            raw = record.header(ID_HEADER)
        except HeaderNameError:  # its line is written all the same, without an id
            raw = None
        rid = raw.decode("utf-8", "replace") if raw else ""
        ts = record.timestamp_ms if record.timestamp_ms is not None else -1
        self._fh.write(
            f"{record.topic}\t{record.partition}\t{record.offset}\t{rid}\t{ts}\t"
            f"{done_s * 1000.0:.3f}\t{outcome}\n"
        )

    def flush(self) -> None:
        if not self._fh.closed:
            self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_ledger(path: Path) -> list[LedgerLine]:
    """A ledger file; a torn last line (the writer was killed) is ignored."""
    out: list[LedgerLine] = []
    if not path.exists():
        return out
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            try:
                topic, p, off, rid, ts, done, outcome = line.rstrip("\n").split("\t")
                out.append(
                    LedgerLine(topic, int(p), int(off), rid, float(ts), float(done), outcome)
                )
            except ValueError:
                if line.endswith("\n"):
                    raise LaglessError(f"{path}:{number}: bad ledger line {line[:80]!r}") from None
                # a torn last line: the writer was killed
    return out
