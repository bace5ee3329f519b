"""The handover breakdown: where a partition changing owner spends its unconsumed time."""

from __future__ import annotations

import json

from lagless.lab.handovers import handovers
from lagless.lab.model import (
    Handovers,
    HandoverStat,
    Measures,
    Ownership,
    Percentiles,
    ScenarioReport,
    Stat,
)


def owned(partition: int, instance: str, start: float, consuming: float | None, end: float,
          ended_by: str, consuming_end: float | None) -> Ownership:  # fmt: skip
    return Ownership(partition, instance, start, end, consuming, ended_by, consuming_end)


def test_stopping_and_running_owners_are_broken_down_apart() -> None:
    spans = [
        # p0: a stops at 10 (STOPPING), releases at 11.5, b assigned at 12, first record 12.25
        owned(0, "a", 0.0, 0.1, 11.5, "stopped", 10.0),
        owned(0, "b", 12.0, 12.25, 30.0, "end", 30.0),
        # p1: a (running) gives it up at 5 to c, assigned at 4.9 (before the revoke: 0 unowned)
        owned(1, "a", 0.0, 0.1, 5.0, "revoked", 5.0),
        owned(1, "c", 4.9, 5.5, 30.0, "end", 30.0),
        # p2: handed over before the window starts: not counted
        owned(2, "a", 0.0, 0.1, 0.5, "revoked", 0.5),
        owned(2, "c", 0.6, 0.7, 30.0, "end", 30.0),
        # p3: the new owner never consumed: no breakdown
        owned(3, "a", 0.0, 0.1, 6.0, "revoked", 6.0),
        owned(3, "b", 6.5, None, 30.0, "end", None),
    ]
    found = handovers(spans, 1.0, 29.0)
    assert found.from_stopping == HandoverStat(1, (1.5, 1.5), (0.5, 0.5), (0.25, 0.25))
    assert found.from_running == HandoverStat(1, (0.0, 0.0), (0.0, 0.0), (0.6, 0.6))
    assert handovers([], 0.0, 1.0) == Handovers()


def test_the_scenario_json_carries_the_handovers() -> None:
    measures = Measures(
        rebalances=1, rebalance_s=Stat(1.0, 1.0), max_unconsumed_s=1.0, max_lag_records=0,
        max_lag_s=0.0, e2e_ms=Percentiles(), e2e_rollout_ms=Percentiles(), lost=0,
        duplicated=0, ownership_overlaps=0,
        handovers=Handovers(from_stopping=HandoverStat(12, (1.0, 2.0), (0.5, 1.0), (0.2, 0.3))),
    )  # fmt: skip
    report = ScenarioReport("kip848", "t", "g", {}, supported=True, measures=measures)
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["handovers"]["from_stopping"] == {
        "count": 12, "draining_s": [1.0, 2.0], "unowned_s": [0.5, 1.0],
        "first_record_s": [0.2, 0.3],
    }  # fmt: skip
    assert doc["handovers"]["from_running"]["count"] == 0
