"""Handlers of bench/throughput.py, importable by the engine's worker processes.

Each notes its processing span: the first handler start and the last handler end. In-process
handlers keep it in :data:`SPAN`; :func:`cpu` (which may run in worker processes) appends
``start end pid`` lines (``time.perf_counter``: CLOCK_MONOTONIC, one clock for every process of
the machine) to the file named by ``$LAGLESS_BENCH_SPANS``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from lagless.engine import Record

CPU_LOOPS_ENV = "LAGLESS_BENCH_CPU_LOOPS"
SPANS_ENV = "LAGLESS_BENCH_SPANS"


class Span:
    """First start and last end of handler calls on this process's threads."""

    def __init__(self) -> None:
        self.first = 0.0
        self.last = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def start(self) -> float:
        now = time.perf_counter()
        if not self.first:
            with self._lock:
                self.first = self.first or now
        return now

    def end(self) -> None:
        self.last = time.perf_counter()
        self.calls += 1

    def seconds(self) -> float:
        return max(0.0, self.last - self.first)


SPAN = Span()


def noop(record: Record) -> None:
    SPAN.start()
    SPAN.end()


def noop_batch(records: Sequence[Record]) -> None:
    SPAN.start()
    SPAN.end()


def timed(handler: Callable[[Record], object]) -> Callable[[Record], None]:
    def run(record: Record) -> None:
        SPAN.start()
        handler(record)
        SPAN.end()

    return run


def timed_batch(handler: Callable[[Sequence[Record]], object]) -> Callable[..., object]:
    def run(records: Sequence[Record]) -> object:
        SPAN.start()
        result = handler(records)
        SPAN.end()
        return result

    return run


def burn(loops: int) -> int:
    """Pure-Python CPU work: holds the GIL throughout."""
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def calibrate(target_s: float = 0.001) -> int:
    """Loops of :func:`burn` taking about ``target_s`` here (best of a few tries)."""
    loops = 20_000
    best = min(time_loops(loops) for _ in range(5))
    return max(1, int(loops * target_s / best))


def time_loops(loops: int) -> float:
    started = time.perf_counter()
    burn(loops)
    return time.perf_counter() - started


_SPANS_FD: list[int] = []  # this process's descriptor of the spans file, once opened


def cpu(record: Record) -> None:
    """~1 ms of pure-Python compute (``$LAGLESS_BENCH_CPU_LOOPS`` loops), span to the file."""
    started = time.perf_counter()
    burn(int(os.environ[CPU_LOOPS_ENV]))
    ended = time.perf_counter()
    if not _SPANS_FD:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        _SPANS_FD.append(os.open(os.environ[SPANS_ENV], flags, 0o644))
    os.write(_SPANS_FD[0], f"{started} {ended} {os.getpid()}\n".encode())


def read_spans(path: Path) -> tuple[int, float, int]:
    """(calls, seconds from the first start to the last end, processes that ran them) of
    :func:`cpu` calls."""
    rows = [line.split() for line in path.read_text().splitlines() if line]
    if not rows:
        return 0, 0.0, 0
    span = max(float(r[1]) for r in rows) - min(float(r[0]) for r in rows)
    return len(rows), span, len({r[2] for r in rows})
