"""`lagless lab rebalance`, tiny: on the embedded broker (mitigated; KIP-848 reported "not
supported by this broker") and on librdkafka's mock cluster (KIP-848 with and without static
membership: the protocol Tansu lacks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagless.broker.mock import MockSettings
from tests.conftest import Cluster, run_cli, serve_mock

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TINY = [
    "--instances", "2", "--partitions", "4", "--rate", "200", "--warmup", "2", "--min-ready", "1",
    "--json",
]  # fmt: skip
SCENARIO_KEYS = {
    "scenario", "topic", "group", "settings", "supported", "rebalances", "rebalance_s",
    "max_unconsumed_s", "max_lag_records", "max_lag_s", "e2e_ms", "lost", "duplicated",
    "ownership_overlaps",
}  # fmt: skip


@pytest.fixture(scope="module")
def lab_mock() -> Iterator[str]:
    """A mock cluster of this module's own whose KIP-848 heartbeat interval is 500 ms (as
    bench/rebalance.py --mock-heartbeat-ms 500): a member hears of its new assignment within
    half a second, so the tiny labs' rollouts settle sooner; what they assert is unchanged.
    Skips with the reason if it cannot start."""
    yield from serve_mock(MockSettings(consumer_heartbeat_ms=500))


def lab(bootstrap: str, out: Path, scenarios: str, *extra: str) -> dict[str, object]:
    result = run_cli(
        "-b", bootstrap, "lab", "rebalance", "--scenarios", scenarios, *TINY, "--out", str(out),
        *extra, timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    doc: dict[str, object] = json.loads(lines[0])
    return doc


def check_measured(row: dict[str, object]) -> None:
    assert set(row) >= SCENARIO_KEYS
    assert row["supported"] is True
    assert row["lost"] == 0, row
    assert row["committed_to_end"] is True, row
    assert isinstance(row["processed"], int) and row["processed"] >= row["produced"]  # type: ignore[operator]
    rebalance = row["rebalance_s"]
    assert isinstance(rebalance, dict) and rebalance["avg"] is not None
    assert rebalance["avg"] <= rebalance["max"]
    e2e = row["e2e_ms"]
    assert isinstance(e2e, dict) and e2e["p50"] <= e2e["p99"] <= e2e["max"]
    assert isinstance(row["ownership_overlaps"], int)


def test_tiny_lab_on_the_embedded_broker(cluster: Cluster, tmp_path: Path) -> None:
    if not cluster.embedded:
        pytest.skip("the 'not supported' row is about the embedded broker")
    doc = lab(cluster.bootstrap, tmp_path, "mitigated,kip848")
    broker = doc["broker"]
    assert isinstance(broker, dict) and broker["product"] == "Tansu"
    mitigated, kip848 = doc["scenarios"]  # type: ignore[misc]
    check_measured(mitigated)
    assert mitigated["settings"]["session.timeout.ms"] == 6000
    assert mitigated["rebalances"] >= 2  # a rollout of 2 instances moves partitions
    assert kip848["supported"] is False and kip848["lost"] is None
    assert "not supported by this broker" in kip848["note"]
    page = (tmp_path / "report.html").read_text()
    assert "mitigated" in page and "kip848" in page and "Tansu" in page
    events = tmp_path / "mitigated" / "s0-g0" / "events.jsonl"
    assert events.exists() and "assigned" in events.read_text()


def test_kip848_and_static_membership_on_the_mock_cluster(lab_mock: str, tmp_path: Path) -> None:
    doc = lab(lab_mock, tmp_path, "kip848,kip848-static")
    broker = doc["broker"]
    assert isinstance(broker, dict) and "mock cluster" in str(broker["product"])
    kip848, static = doc["scenarios"]  # type: ignore[misc]
    for row in (kip848, static):
        check_measured(row)
        assert row["ownership_overlaps"] == 0  # a correct coordinator never doubles an owner
    # a static member restarting in place gets its own partitions back: nothing moves to the
    # other member, so the rebalance is as short as the restart
    assert static["settings"]["static_membership"] is True
    assert static["max_unconsumed_s"] < 10, static


def test_two_services_on_the_mock_cluster(lab_mock: str, tmp_path: Path) -> None:
    """Service #1 (rolled) enriches into topic #2; service #2 (not rolled) is where end to end
    is measured, from the producer's timestamp across both hops."""
    doc = lab(
        lab_mock, tmp_path, "kip848", "--topology", "article", "--partitions", "6",
        "--instances2", "2", "--partitions2", "8", "--work2-ms", "2",
    )  # fmt: skip
    assert doc["config"]["topology"] == "article"  # type: ignore[index]
    (row,) = doc["scenarios"]  # type: ignore[misc]
    check_measured(row)
    assert row["topology"] == "article"
    first, second = row["services"]
    assert (first["service"], first["role"]) == ("service-1", "rolled")
    assert (second["service"], second["partitions"], second["work_ms"]) == ("service-2", 8, 2.0)
    assert first["topic"] == row["topic"] and second["topic"] != row["topic"]
    for service in (first, second):
        assert service["lost"] == 0, service  # every acknowledged id ran at both services
        assert service["processed"] >= service["produced"] == row["produced"]
        assert isinstance(service["max_position_lag_records"], int)
    # today's keys are the rolled service's; e2e is the last service's, with its average
    assert row["rebalance_s"] == first["rebalance_s"] and row["rebalances"] >= 2
    assert row["max_lag_records"] == first["max_lag_records"]
    assert row["e2e_ms"] == second["e2e_ms"] and row["e2e_rollout_ms"] == second["e2e_rollout_ms"]
    assert second["rebalances"] == 0  # service #2 is not rolled
    e2e = row["e2e_ms"]
    assert e2e["avg"] is not None and e2e["p50"] <= e2e["max"]
    assert row["e2e_rollout_ms"]["avg"] is not None
    assert row["cpu"] is None or row["cpu"]["cores"] >= 1
    assert [r["scenario"] for r in doc["ablation"]] == ["kip848"]  # type: ignore[index]
    events = tmp_path / "kip848" / "service-2" / "s0-g0" / "events.jsonl"
    assert events.exists() and "assigned" in events.read_text()
