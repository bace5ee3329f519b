"""Finished records' figures published in bulk: counted exactly, together, when due."""

from __future__ import annotations

import numpy as np

from lagless.engine.results.publish import FLUSH_RECORDS, Publisher
from lagless.engine.summary import Latency, LatencyLog
from lagless.observe.metrics import Metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_notes_are_published_together_on_flush() -> None:
    metrics, log = Metrics(), LatencyLog()
    publish = Publisher(log)
    ok = metrics.records_processed.labels("t", "0", "ok")
    e2e = metrics.e2e_latency.labels("t")
    publish.finished(ok, e2e, np.array([1_000, 2_000, -1], np.int64), 3.0)  # ends at 3,000 ms
    publish.finished(ok, e2e, np.array([2_500], np.int64), 4.0)
    publish.processing(metrics.processing_time.labels("t"), [0.01, 0.02])
    assert sample(metrics, "lagless_records_processed_total", topic="t", partition="0",
                  outcome="ok") == 0.0, "nothing published before the flush"  # fmt: skip
    assert log.summary() == Latency(None, None, None)
    publish.flush()
    assert sample(metrics, "lagless_records_processed_total", topic="t", partition="0",
                  outcome="ok") == 4.0  # fmt: skip
    # a record without a timestamp counts as finished but has no latency
    assert sample(metrics, "lagless_e2e_latency_seconds_count", topic="t") == 3.0
    assert sample(metrics, "lagless_e2e_latency_seconds_sum", topic="t") == 2.0 + 1.0 + 1.5
    assert sample(metrics, "lagless_processing_seconds_count", topic="t") == 2.0
    assert log.summary() == Latency(1500.0, 2000.0, 2000.0)
    publish.flush()  # nothing noted since: nothing more
    assert sample(metrics, "lagless_e2e_latency_seconds_count", topic="t") == 3.0


def test_a_flush_follows_once_enough_records_are_noted() -> None:
    metrics, log = Metrics(), LatencyLog()
    publish = Publisher(log)
    ok = metrics.records_processed.labels("t", "1", "ok")
    e2e = metrics.e2e_latency.labels("t")
    batch = np.full(500, 1_000, np.int64)
    notes = FLUSH_RECORDS // 500
    for _ in range(notes):
        publish.finished(ok, e2e, batch, 2.0)
    assert sample(metrics, "lagless_e2e_latency_seconds_count", topic="t") == 0.0
    publish.finished(ok, e2e, batch, 2.0)  # past FLUSH_RECORDS
    assert sample(metrics, "lagless_e2e_latency_seconds_count", topic="t") == 500.0 * (notes + 1)
    assert sample(metrics, "lagless_records_processed_total", topic="t", partition="1",
                  outcome="ok") == 500.0 * (notes + 1)  # fmt: skip
