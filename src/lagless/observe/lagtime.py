"""The one definition of lag in seconds, used by the engine's gauge, ``lagless lag``,
``lagless group describe``, the run report and the rebalance lab.

As kafka-lag-exporter: lag in seconds is **now minus the timestamp of the first record the group
has not committed yet** (the record at the committed offset, which the group reads next after a
restart); **0 when the partition is caught up** (no record after the committed offset). It is
the time the oldest unconsumed record has waited, so it grows by one second per second while a
consumer is stuck, whatever the producers do.
"""

from __future__ import annotations


def lag_seconds(now_ms: int, first_uncommitted_ts_ms: int | None, lag_records: int) -> float | None:
    """Lag in seconds of one partition.

    ``first_uncommitted_ts_ms`` is the timestamp (ms since the epoch) of the record at the
    committed offset; ``lag_records`` the records from there to the end. 0.0 when caught up;
    None when lagging and that record's timestamp is not known. Never negative (clock skew
    between producer and reader is clamped).
    """
    if lag_records <= 0:
        return 0.0
    if first_uncommitted_ts_ms is None:
        return None
    return max(0.0, (now_ms - first_uncommitted_ts_ms) / 1000.0)
