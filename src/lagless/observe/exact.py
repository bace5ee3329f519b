"""Exact latency values beside the histogram, for the run timeline's percentiles.

A Prometheus histogram only keeps bucket counts: percentiles read from it are interpolated
inside a bucket (flat lines, then jumps, in a report). While a :class:`~lagless.observe.timeline.
Recorder` runs, every value observed by the e2e latency histogram is also kept here, and each
timeline sample takes the exact percentiles of its interval's values. Without a recorder
nothing is kept (no cost, no memory). Past :data:`CAPACITY` values in one interval the sample
falls back to the buckets and says so (``e2e_exact`` false).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

from prometheus_client import Histogram

CAPACITY = 1_000_000  # values kept per interval at most


class ExactValues:
    """Values observed since the last :meth:`drain` (appends are atomic: no lock)."""

    def __init__(self) -> None:
        self.enabled = False
        self.overflow = False
        self._values: deque[float] = deque()

    def add(self, value: float) -> None:
        if len(self._values) < CAPACITY:
            self._values.append(value)
        else:
            self.overflow = True

    def add_many(self, values: Sequence[float]) -> None:
        room = CAPACITY - len(self._values)
        if len(values) > room:
            self.overflow = True
            values = values[: max(room, 0)]
        self._values.extend(values)

    def drain(self) -> tuple[list[float], bool]:
        """The values since the last drain, and whether all of them were kept."""
        out = []
        values = self._values
        while values:
            out.append(values.popleft())
        complete, self.overflow = not self.overflow, False
        return out, complete


_observe = Histogram.observe


class RecordedHistogram(Histogram):
    """A Histogram whose observations also go to an :class:`ExactValues` while it is enabled."""

    def __init__(self, *args: Any, exact: ExactValues | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exact = exact
        self._kwargs["exact"] = exact  # children (labels) share the parent's values

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        _observe(self, amount, exemplar)  # no super(): this runs once per record
        exact = self._exact
        if exact is not None and exact.enabled:
            exact.add(amount)


def exact_quantile(q: float, ordered: Sequence[float]) -> float | None:
    """The ``q`` quantile of sorted values (nearest rank); None when there are none."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]
