"""Every example app (examples/) and the README's first example run as the docs show, against
the test broker."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lagless.ids import MALFORMED_HEADER
from tests.conftest import Cluster, run_cli, unique
from tests.integration.app_helpers.docs import python_blocks
from tests.integration.engine_helpers import GROUP_FLAGS, REPO

pytestmark = pytest.mark.integration

EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.py") if p.stem != "__init__")


def lagless(
    cluster: Cluster, *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> str:
    done = run_cli(*args, cluster=cluster, cwd=cwd, env=env)
    assert done.returncode == 0, f"lagless {' '.join(args)}: {done.stderr}"
    return done.stdout


def run_example(
    kafka: Cluster, target: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> dict[str, dict[str, object]]:
    args = ("run", target, "--until-idle", "2", *GROUP_FLAGS, "--json")
    out = lagless(kafka, *args, cwd=cwd, env=env)
    summaries: dict[str, dict[str, object]] = json.loads(out)
    return summaries


def test_every_example_is_tested() -> None:
    tested = {n.removeprefix("test_").removesuffix("_example") for n in globals()}
    assert set(EXAMPLES) <= tested, f"examples without a test: {set(EXAMPLES) - tested}"


def test_enricher_example(cluster: Cluster) -> None:
    for topic, partitions in (("orders", "3"), ("orders-enriched", "3"), ("orders-dlq", "1")):
        lagless(cluster, "topic", "create", topic, "--partitions", partitions)
    lagless(cluster, "produce", "--topic", "orders", "--workload", "events",
            "--count", "1000", "--bad-fraction", "0.02")  # fmt: skip
    malformed = sum(1 for r in cluster.read("orders") if r.header(MALFORMED_HEADER) is not None)
    assert malformed > 0
    summary = run_example(cluster, "examples.enricher:app")["enrich"]
    assert (summary["processed"], summary["dlq"]) == (1000, malformed)
    enriched = cluster.read("orders-enriched", count=1000 - malformed)
    assert len(enriched) == 1000 - malformed
    doc = json.loads(enriched[0].value or b"")
    assert doc["amount_eur"] > 0 and doc["source"].startswith("orders[")
    assert len(cluster.read("orders-dlq", count=malformed)) == malformed


def test_caller_example(cluster: Cluster) -> None:
    for topic in ("calls", "calls-done"):
        lagless(cluster, "topic", "create", topic, "--partitions", "3")
    lagless(cluster, "produce", "--topic", "calls", "--workload", "jobs",
            "--count", "5000", "--sleep-ms", "100:300")  # fmt: skip
    summary = run_example(cluster, "examples.caller:app")["call"]
    assert summary["processed"] == 5000
    assert isinstance(summary["max_in_flight_seen"], int) and summary["max_in_flight_seen"] > 500
    assert isinstance(summary["seconds"], float) and summary["seconds"] < 60  # vs 1,000 s serial
    done = cluster.read("calls-done", count=5000)
    assert len(done) == 5000 and {json.loads(r.value or b"")["status"] for r in done} == {200}


def test_batch_writer_example(cluster: Cluster, tmp_path: Path) -> None:
    for topic, partitions in (("order-events", "3"), ("order-events-dlq", "1")):
        lagless(cluster, "topic", "create", topic, "--partitions", partitions)
    lagless(cluster, "produce", "--topic", "order-events", "--workload", "events",
            "--count", "3000", "--bad-fraction", "0.02")  # fmt: skip
    events = cluster.read("order-events", count=3000)
    malformed = sum(1 for r in events if r.header(MALFORMED_HEADER) is not None)
    assert malformed > 0
    db = tmp_path / "orders.db"
    summary = run_example(cluster, "examples.batch_writer:app", env={"ORDERS_DB": str(db)})
    assert (summary["write"]["processed"], summary["write"]["dlq"]) == (3000, malformed)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select partition, offset, order_id from orders").fetchall()
    good = {(r.partition, r.offset) for r in events if r.header(MALFORMED_HEADER) is None}
    assert {(p, o) for p, o, _ in rows} == good and len(rows) == len(good)
    assert len(cluster.read("order-events-dlq", count=malformed)) == malformed


def test_readme_first_example_is_an_app_that_lagless_run_starts(
    cluster: Cluster, tmp_path: Path
) -> None:
    service = python_blocks("README.md")[0]
    assert "lagless.App(" in service
    assert service == python_blocks("docs/app.md")[0]  # one example, shown twice
    # The topics renamed: test_readme_first_example creates the README's own names on the
    # same session broker.
    source, dlq, out = unique("payments"), unique("payments-dlq"), unique("payments-big")
    renamed = service.replace('"payments-dlq"', repr(dlq)).replace('"payments-big"', repr(out))
    renamed = renamed.replace('"payments"', repr(source)).replace("big-payments", unique("g"))
    (tmp_path / "service.py").write_text(renamed)
    for topic, partitions in ((source, "3"), (dlq, "1"), (out, "3")):
        lagless(cluster, "topic", "create", topic, "--partitions", partitions)
    payments = [{"payment_id": f"p{i}", "amount": i * 10} for i in range(30)]
    cluster.produce(source, [*payments, b"{broken", {"payment_id": "p-x"}], key="c1")
    summary = run_example(cluster, "service:app", cwd=tmp_path)["big"]
    assert (summary["processed"], summary["dlq"]) == (32, 2)
    big = cluster.read(out, count=19)
    assert [json.loads(r.value or b"")["payment_id"] for r in big] == [
        f"p{i}" for i in range(11, 30)
    ]
    assert len(cluster.read(dlq, count=2)) == 2
