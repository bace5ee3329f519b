"""Finished records' figures, published in bulk: the finished counters, the handler-time and
e2e latency histograms, and the percentile log.

A record's **e2e latency** is the time from its timestamp to the end of the handler call that
finished it (a record without a timestamp has none): the one definition behind
``lagless_e2e_latency_seconds`` and ``RunSummary.e2e_ms``. Every finished record counts in
both, exactly; :class:`~lagless.engine.summary.LatencyLog` says when the percentiles sample.

The poll loop notes each finished task here (:meth:`Publisher.finished`: how many records,
of which kind, their timestamps and their end; :meth:`Publisher.processing`: the handler's
time per call). The notes are published together — a scrape never sees a record counted as
finished without its latency — once :data:`FLUSH_RECORDS` records are noted, at the loop's
watch step (about twice a second, see :mod:`lagless.engine.watch.gauges`), and before the run's
figures are read. Publishing thousands of records at once costs one numpy pass and one
update of each metric where one per task cost more than reading the records.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lagless.engine.summary import LatencyLog
from lagless.observe.metrics import observe_many

FLUSH_RECORDS = 8192  # publish once this many finished records are noted


class _Stamps:
    """The timestamps of finished records of one topic and when their tasks ended."""

    __slots__ = ("ends", "lengths", "stamps")

    def __init__(self) -> None:
        self.stamps: list[NDArray[np.int64]] = []
        self.ends: list[float] = []  # seconds since the epoch, one a task
        self.lengths: list[int] = []

    def latencies_ms(self) -> NDArray[np.float64]:
        """The e2e latency of each record with a timestamp, in ms."""
        stamps = np.concatenate(self.stamps)
        ends = np.repeat(np.asarray(self.ends) * 1000.0, self.lengths)
        ms = ends - stamps
        return ms if stamps.min() >= 0 else ms[stamps >= 0]


class Publisher:
    """What finished since the last :meth:`flush`, per metric child."""

    def __init__(self, latency: LatencyLog) -> None:
        self._latency = latency
        self._counts: dict[Any, int] = {}  # a finished counter child -> records
        self._seconds: dict[Any, list[float]] = {}  # a processing histogram child -> calls
        self._stamps: dict[Any, _Stamps] = {}  # an e2e histogram child -> records
        self._noted = 0

    def finished(
        self, counter: Any, e2e: Any, stamps: NDArray[np.int64], finished_at: float
    ) -> None:
        """Records with timestamps ``stamps`` (ms, -1: none) finished at ``finished_at``
        (wall clock): count them in ``counter`` and their latencies in ``e2e``."""
        self.finished_tasks(counter, e2e, stamps, [finished_at], [len(stamps)])

    def finished_tasks(
        self,
        counter: Any,
        e2e: Any,
        stamps: NDArray[np.int64],
        ends: list[float],
        lengths: list[int],
    ) -> None:
        """Tasks' records with timestamps ``stamps`` (the tasks' records one after another)
        finished, task ``i``'s ``lengths[i]`` records at ``ends[i]``: count them in ``counter``
        and their latencies in ``e2e``."""
        count = len(stamps)
        self._counts[counter] = self._counts.get(counter, 0) + count
        pending = self._stamps.get(e2e)
        if pending is None:
            pending = self._stamps[e2e] = _Stamps()
        pending.stamps.append(stamps)
        pending.ends.extend(ends)
        pending.lengths.extend(lengths)
        self._noted += count
        if self._noted >= FLUSH_RECORDS:
            self.flush()

    def processing(self, histogram: Any, seconds: list[float]) -> None:
        """Handler calls that took ``seconds``, for ``histogram``."""
        pending = self._seconds.get(histogram)
        if pending is None:
            self._seconds[histogram] = list(seconds)
        else:
            pending.extend(seconds)

    def flush(self) -> None:
        """Publish everything noted."""
        for histogram, seconds in self._seconds.items():
            observe_many(histogram, seconds)
        for e2e, pending in self._stamps.items():
            ms = pending.latencies_ms()
            if len(ms):
                self._latency.add_many(ms)
                observe_many(e2e, np.maximum(ms, 0.0) / 1000.0)
        for counter, count in self._counts.items():
            counter.inc(count)
        self._counts, self._seconds, self._stamps = {}, {}, {}
        self._noted = 0
