"""The console's store: retention, the size bound, series and restarts."""

from __future__ import annotations

from pathlib import Path

from lagless.ui.model import GroupSample, PartitionSample, Rebalance, Snapshot, TopicSample
from lagless.ui.store import Store


def snap(t: float, lag: int, partitions: int = 20, groups: int = 5) -> Snapshot:
    gs = tuple(
        GroupSample(f"g{g}", "Stable", "range", 1, "broker",
                    tuple(PartitionSample("t", p, 100 + int(t), 100 + int(t) + lag, lag, 1.5,
                                          ("c1",)) for p in range(partitions)), True)
        for g in range(groups)
    )  # fmt: skip
    return Snapshot(t, True, gs, (TopicSample("t", tuple(range(partitions))),),
                    rebalances=(Rebalance("g0", t, 1.0, 2),) if t == 5 else ())  # fmt: skip


def test_retention_deletes_old_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "ui.sqlite", retention=10.0)
    for t in range(30):
        store.write(snap(1000.0 + t, t))
    store.prune(now=1030.0)
    series = store.group_series("g0", 0, 2000)
    assert series and min(t for t, _, _ in series) >= 1020.0
    assert store.rebalances("g0", 0, 2000) == []  # the one at t=5 (epoch 5) is past retention


def test_the_store_never_grows_past_its_bound(tmp_path: Path) -> None:
    bound = 400 * 1024
    store = Store(tmp_path / "ui.sqlite", retention=1e9, max_bytes=bound)
    for t in range(400):
        store.write(snap(float(t), t % 7, partitions=20, groups=10))
        if t % 50 == 49:
            store.prune(now=float(t))
            assert store.size() <= bound
    store.prune(now=400.0)
    assert store.size() <= bound
    assert (tmp_path / "ui.sqlite").stat().st_size <= bound * 1.5
    series = store.group_series("g0", 0, 400)
    assert series and series[-1][0] == 399.0  # the newest rows are kept, the oldest went


def test_history_survives_a_restart_and_partitions_are_written_on_change(tmp_path: Path) -> None:
    store = Store(tmp_path / "ui.sqlite")
    for t in range(5):
        store.write(snap(100.0 + t, 3, partitions=2, groups=1))
    store.close()
    again = Store(tmp_path / "ui.sqlite")
    lags = [lag for _, lag, _ in again.group_series("g0", 0, 1000)]
    assert lags == [6] * 5  # summed over 2 partitions
    rows = again.partition_rows("g0", 0, 1000)
    assert len(rows) == 2 * 5  # committed moved every cycle: a row each
    assert rows[0]["owners"] == ["c1"]
    assert again.topic_ends("t", 0, 1000) == [(100.0, 1)]  # unchanged ends: written once
