"""app.run(metrics_port=...) on the real broker: /healthz, /readyz and /metrics answer before
the group is joined, once it is, and all through a rebalance when a second instance joins."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

import lagless
from lagless.broker.embedded import free_port
from lagless.testing import TestKafka

pytestmark = pytest.mark.integration


def get(port: int, path: str) -> tuple[int, str]:
    """Status and body; raises if the server does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_answer(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            get(port, "/healthz")
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing serves on {port}"
            time.sleep(0.02)


def make_app(topic: str, group: str) -> lagless.App:
    app = lagless.App(group=group, session_timeout_ms=6000, heartbeat_interval_ms=1500,
                      assignor="range")  # fmt: skip

    @app.handler(topic, on_failure="skip")
    def work(value: bytes) -> None:
        time.sleep(0.001)

    return app


def start(app: lagless.App, port: int, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            app.run(metrics_port=port)
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_ready(port: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, body = get(port, "/readyz")
        if status == 200:
            doc: dict[str, Any] = json.loads(body)
            return doc
        assert time.monotonic() < deadline, f"not ready in {timeout} s: {body}"
        time.sleep(0.1)


def test_healthz_and_readyz_answer_through_a_rebalance(lagless_kafka: TestKafka) -> None:
    topic, group = lagless_kafka.topic(2), lagless_kafka.group()
    lagless_kafka.produce(topic, [b"x"] * 20)
    first = make_app(topic, group).configured(lagless_kafka.settings)
    second = make_app(topic, group).configured(lagless_kafka.settings)
    port1, port2 = free_port(), free_port()
    errors: list[BaseException] = []
    threads = [start(first, port1, errors)]
    try:
        wait_answer(port1)
        status, body = get(port1, "/readyz")
        assert status == 503, body  # alive, but the join takes seconds on this broker
        assert get(port1, "/healthz")[0] == 200
        ready = wait_ready(port1, 30)
        assert ready["handlers"]["work"]["assigned"] == 2

        threads.append(start(second, port2, errors))
        wait_answer(port2)
        seen: set[int] = set()
        deadline = time.monotonic() + 40
        while get(port2, "/readyz")[0] != 200:  # the rebalance: every probe still answers
            assert time.monotonic() < deadline, "the second instance never became ready"
            assert get(port1, "/healthz")[0] == 200  # the first one's loop keeps turning
            seen.add(get(port1, "/readyz")[0])
            time.sleep(0.1)
        assert seen <= {200, 503}
        both = [wait_ready(port, 20)["handlers"]["work"]["assigned"] for port in (port1, port2)]
        assert both == [1, 1]

        status, metrics = get(port1, "/metrics")
        assert status == 200
        assert 'handler="work"' in metrics and "lagless_records_processed_total" in metrics
        assert f'group="{group}"' in metrics  # as every lagless run labels its samples
    finally:
        second.stop()
        first.stop()
        for thread in threads:
            thread.join(30)
    assert not any(t.is_alive() for t in threads), "stop() did not end run()"
    assert not errors, errors
    with pytest.raises(OSError):
        get(port1, "/healthz")  # the server stopped with the app
