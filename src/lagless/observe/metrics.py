"""Every lagless metric, named in one place (prometheus-client).

The engine and the Spark pipeline both report through :class:`Metrics`. Each instance owns a
registry (so tests and several engines in one process do not collide); :meth:`Metrics.serve`
exposes it over HTTP for Prometheus. The run timeline samples the same object once a second.
docs/observability.md documents every metric, the timeline, ``lagless lag`` and the report.

| name | type | labels | meaning |
|---|---|---|---|
| lagless_records_processed_total | counter | topic, partition, outcome | records finished (ok, dlq, skipped) |
| lagless_e2e_latency_seconds | histogram | topic | record timestamp -> handler done |
| lagless_processing_seconds | histogram | topic | handler time of one call (a record, or a batch), all attempts |
| lagless_in_flight | gauge | | records dispatched and not finished |
| lagless_lag_records | gauge | topic, partition | high watermark - first unfinished offset (engine) / - processed end (pipeline) |
| lagless_lag_seconds | gauge | topic, partition | now - timestamp of the first record not committed yet; 0 when caught up (lagless.observe.lagtime.lag_seconds) |
| lagless_position_lag_records | gauge | topic, partition | log end (the high watermark as for lagless_end_offset) - the consumer's position (the offset the next poll returns), as Kafka's records-lag; set at every poll that returned records of the partition and twice a second (before its first record: from the committed offset, or where `auto.offset.reset` starts, so an empty or caught-up partition shows 0) |
| lagless_end_offset | gauge | topic, partition | the partition's end offset (high watermark) as the consumer last saw it (from its fetches; while the partition is paused, asked of the cluster about once a second): its rise is the input rate |
| lagless_paused_partitions | gauge | | partitions paused by backpressure now |
| lagless_pause_events_total | counter | topic, partition | times a partition was paused |
| lagless_rebalances_total | counter | kind | rebalance callbacks: assign, revoke, lost |
| lagless_rebalance_callback_seconds | histogram | | rebalance callback time: from a revoke/assign callback's start to work resuming (not the group's disruption) |
| lagless_partitions_assigned_total | counter | | partitions received |
| lagless_partitions_revoked_total | counter | | partitions given up cleanly |
| lagless_partitions_lost_total | counter | | partitions lost without commit |
| lagless_commits_total | counter | | offset commits sent |
| lagless_dlq_records_total | counter | topic | records of source ``topic`` sent to the dead-letter topic (engine and pipeline alike) |
| lagless_oldest_unfinished_age_seconds | gauge | topic, partition | age of the oldest unfinished record |
| lagless_batches_total | counter | | Spark micro-batches completed |
| lagless_batch_seconds | gauge | | duration of the last Spark micro-batch |

The engine's per-partition gauges (lag, lag seconds, position lag, end offset, oldest unfinished
age) exist only for the partitions the consumer owns, from their first known value: a partition
that leaves it takes its series with it (not a 0, which would say "caught up").

Every exposed sample also carries a ``group`` label (the consumer group of the run) when the
:class:`Metrics` was made with one, so several engines scraped into one Prometheus stay apart.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Iterator, Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

import numpy as np
from numpy.typing import NDArray
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lagless.observe.exact import ExactValues, RecordedHistogram
from lagless.observe.http import HealthSource, StatusSource, serve


def observe_many(histogram: Any, values: Sequence[float] | NDArray[np.floating[Any]]) -> None:
    """``histogram.observe(v)`` for every value, each bucket and the sum updated once (many
    values, or a numpy array: counted by numpy, not value by value).

    ``histogram`` is a labelled child of a prometheus_client ``Histogram`` (its bucket upper
    bounds ascend and end with +Inf, as ``observe`` itself relies on).
    """
    if not len(values):
        return
    bounds = histogram._upper_bounds
    buckets = histogram._buckets
    if isinstance(values, np.ndarray) or len(values) >= NUMPY_FROM:
        array = np.asarray(values, dtype=np.float64)
        tally = np.bincount(np.searchsorted(_bounds_array(histogram), array, side="left"))
        for index in np.flatnonzero(tally).tolist():
            buckets[min(index, len(buckets) - 1)].inc(int(tally[index]))
        histogram._sum.inc(float(array.sum()))
    else:
        for index, count in Tally(bisect_left(bounds, v) for v in values).items():
            buckets[min(index, len(buckets) - 1)].inc(count)
        histogram._sum.inc(sum(values))
    exact = getattr(histogram, "_exact", None)  # a RecordedHistogram keeps them while enabled
    if exact is not None and exact.enabled:
        exact.add_many(values.tolist() if isinstance(values, np.ndarray) else values)


NUMPY_FROM = 64  # observe_many counts this many values or more with numpy


def _bounds_array(histogram: Any) -> NDArray[np.float64]:
    """A histogram child's bucket upper bounds as a numpy array (made once, kept on it)."""
    bounds: NDArray[np.float64] | None = getattr(histogram, "_lagless_bounds", None)
    if bounds is None:
        bounds = np.asarray(histogram._upper_bounds, dtype=np.float64)
        histogram._lagless_bounds = bounds
    return bounds


LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0,
)  # fmt: skip  # fine enough above 10 s that interval percentiles do not jump 30 -> 60 -> 120


class Metrics:
    """The metrics of one engine or pipeline run."""

    def __init__(self, registry: CollectorRegistry | None = None, group: str | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.group = group
        r = self.registry
        tp = ["topic", "partition"]
        self.records_processed = Counter(
            "lagless_records_processed", "records finished", [*tp, "outcome"], registry=r
        )
        self.e2e_exact = ExactValues()  # filled only while a timeline Recorder runs
        self.e2e_latency = RecordedHistogram(
            "lagless_e2e_latency_seconds", "record timestamp -> done", ["topic"],
            buckets=LATENCY_BUCKETS, registry=r, exact=self.e2e_exact,
        )  # fmt: skip
        self.processing_time = Histogram(
            "lagless_processing_seconds", "handler time per call", ["topic"],
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.in_flight = Gauge("lagless_in_flight", "records in flight", registry=r)
        self.lag_records = Gauge("lagless_lag_records", "lag in records", tp, registry=r)
        self.lag_seconds = Gauge("lagless_lag_seconds", "lag in seconds", tp, registry=r)
        self.position_lag_records = Gauge(
            "lagless_position_lag_records", "log end - consumer position", tp, registry=r
        )
        self.end_offset = Gauge("lagless_end_offset", "partition end offset seen", tp, registry=r)
        self.paused_partitions = Gauge("lagless_paused_partitions", "paused now", registry=r)
        self.pause_events = Counter("lagless_pause_events", "pauses", tp, registry=r)
        self.rebalances = Counter("lagless_rebalances", "rebalance callbacks", ["kind"], registry=r)
        self.rebalance_seconds = Histogram(
            "lagless_rebalance_callback_seconds",
            "rebalance callback time",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.partitions_assigned = Counter("lagless_partitions_assigned", "assigned", registry=r)
        self.partitions_revoked = Counter("lagless_partitions_revoked", "revoked", registry=r)
        self.partitions_lost = Counter("lagless_partitions_lost", "lost", registry=r)
        self.commits = Counter("lagless_commits", "offset commits", registry=r)
        self.dlq_records = Counter("lagless_dlq_records", "dead-lettered", ["topic"], registry=r)
        self.oldest_unfinished_age = Gauge(
            "lagless_oldest_unfinished_age_seconds", "oldest unfinished record age", tp, registry=r
        )
        self.batches = Counter("lagless_batches", "Spark micro-batches", registry=r)
        self.batch_seconds = Gauge("lagless_batch_seconds", "last micro-batch duration", registry=r)

    def serve(
        self,
        port: int,
        addr: str = "127.0.0.1",
        health: HealthSource | None = None,
        status: StatusSource | None = None,
    ) -> WSGIServer:
        """Expose the metrics at http://addr:port/metrics, with ``/healthz`` and ``/readyz``
        answered from ``health`` (see :mod:`lagless.observe.http`), from a daemon thread.

        Returns the server (``.shutdown()`` stops it); a port that cannot be bound is a
        one-line LaglessError.
        """
        return serve(self.exposed(), port, addr, health, status)

    def exposed(self) -> CollectorRegistry:
        """The registry Prometheus scrapes: every sample with the ``group`` label added."""
        if self.group is None:
            return self.registry
        out = CollectorRegistry(auto_describe=False)
        out.register(GroupLabelled(self.registry, self.group))
        return out


class GroupLabelled(Collector):
    """Every sample of ``inner`` with a ``group`` label (the run's constant label)."""

    def __init__(self, inner: CollectorRegistry, group: str) -> None:
        self.inner = inner
        self.group = group

    def collect(self) -> Iterator[Metric]:
        for family in self.inner.collect():
            out = Metric(family.name, family.documentation, family.type, family.unit)
            for sample in family.samples:
                out.add_sample(
                    sample.name, {**sample.labels, "group": self.group}, sample.value,
                    sample.timestamp, sample.exemplar,
                )  # fmt: skip
            yield out
