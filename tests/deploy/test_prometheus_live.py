"""A real Prometheus scraping a running ``lagless run`` app on the embedded broker, with the
rules loaded: every dashboard query evaluates and returns data, every alert expression
evaluates, and LaglessLagHigh goes pending for a group kept behind (threshold lowered to 1 s).

The app reads its metrics port and address from LAGLESS_METRICS_PORT / LAGLESS_METRICS_HOST,
as the rendered manifests set them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lagless.broker.embedded import free_port
from lagless.testing import TestKafka
from tests.conftest import LAGLESS
from tests.deploy.test_dashboard import BOARD
from tests.deploy.test_prometheus_rules import RULES

pytestmark = pytest.mark.integration

PROMETHEUS = shutil.which("prometheus")

SLOW_SERVICE = """\
import time

from pydantic import BaseModel

import lagless


class Payment(BaseModel):
    payment_id: str
    amount: float


app = lagless.App(group="{group}", session_timeout_ms=6000, heartbeat_interval_ms=1500)


@app.handler("{source}", ordering="key", max_in_flight=500, dlq="{dlq}", value=Payment,
             output="{out}")
def big(payment: Payment) -> Payment | None:
    time.sleep(0.05)  # one key: one at a time, so the group stays behind for a while
    return payment if payment.amount > 100 else None
"""


def query(base: str, expr: str) -> dict[str, Any]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            result: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as err:  # a bad query: 400 with the error in the body
        result = json.load(err)
    return result


def get(base: str, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        result: dict[str, Any] = json.load(response)
    return result


def wait(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(1.0)


def dashboard_queries() -> list[str]:
    board = json.loads(BOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    return [e.replace("$group", ".*").replace("$__rate_interval", "30s") for e in exprs]


def alert_rules(threshold_lag_s: int | None = None) -> tuple[str, dict[str, str]]:
    """The rules file's text (LaglessLagHigh's threshold lowered if asked) and each alert's
    expression."""
    text = RULES.read_text()
    if threshold_lag_s is not None:
        assert text.count(") > 60\n") == 1
        text = text.replace(") > 60\n", f") > {threshold_lag_s}\n")
    groups = yaml.safe_load(text)["groups"]
    return text, {r["alert"]: r["expr"] for g in groups for r in g["rules"]}


@pytest.fixture
def behind_app(lagless_kafka: TestKafka, tmp_path: Path) -> Iterator[tuple[int, str]]:
    """``lagless run`` of a slow app with a backlog, serving metrics on the port its
    environment names; (port, group)."""
    source = lagless_kafka.topic(2)
    dlq, out = lagless_kafka.topic(), lagless_kafka.topic()
    group = lagless_kafka.group()
    (tmp_path / "slowpay.py").write_text(
        SLOW_SERVICE.format(group=group, source=source, dlq=dlq, out=out)
    )
    payments = [{"payment_id": f"p{i}", "amount": 50 + i} for i in range(2000)]
    lagless_kafka.produce(source, payments, key="one-customer")
    lagless_kafka.produce(source, ["not json", b"\xff"], key="bad")  # two dead letters
    port = free_port()
    env = {**os.environ, "LAGLESS_METRICS_PORT": str(port), "LAGLESS_METRICS_HOST": "127.0.0.1",
           "LAGLESS_BOOTSTRAP": lagless_kafka.bootstrap}  # fmt: skip
    proc = subprocess.Popen(
        [LAGLESS, "run", "slowpay:app"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield port, group
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def prometheus(behind_app: tuple[int, str], tmp_path: Path) -> Iterator[str]:
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (Debian's prometheus package; make tools)")
    app_port, _ = behind_app
    rules_text, _ = alert_rules(threshold_lag_s=1)
    (tmp_path / "rules.yml").write_text(rules_text)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": [
            {"job_name": "slowpay", "static_configs": [{"targets": [f"127.0.0.1:{app_port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(base + "/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "exited"
            return False

    try:
        wait(ready, 60, "prometheus ready")
        yield base
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_dashboard_queries_and_alerts_evaluate_against_a_running_app(
    prometheus: str, behind_app: tuple[int, str]
) -> None:
    _, group = behind_app
    wait(lambda: query(prometheus, f'lagless_in_flight{{group="{group}"}}')["data"]["result"],
         120, "the app's metrics scraped")  # fmt: skip
    for expr in dashboard_queries():  # each returns data once its rate window has samples
        answer = wait(lambda e=expr: _with_data(query(prometheus, e)), 90, f"data for {expr}")
        assert answer["status"] == "success"
        assert any(r["metric"].get("group") == group for r in answer["data"]["result"]), expr
    _, alerts = alert_rules()
    for name, expr in alerts.items():
        answer = query(prometheus, expr)
        assert answer["status"] == "success", (name, answer)
    pending = wait(lambda: _lag_alert(prometheus, group), 120, "LaglessLagHigh pending")
    assert pending["state"] in ("pending", "firing")
    assert pending["labels"]["group"] == group
    assert pending["labels"]["severity"] == "warning"
    assert {"topic", "partition"} <= set(pending["labels"])


def _with_data(answer: dict[str, Any]) -> dict[str, Any] | None:
    assert answer["status"] == "success", answer
    return answer if answer["data"]["result"] else None


def _lag_alert(base: str, group: str) -> dict[str, Any] | None:
    for alert in get(base, "/api/v1/alerts")["data"]["alerts"]:
        if alert["labels"].get("alertname") == "LaglessLagHigh" and (
            alert["labels"].get("group") == group
        ):
            result: dict[str, Any] = alert
            return result
    return None
