"""Running a lagless.App as a hostile user would, on the real broker: signals while a slow
``async def`` handler awaits under ``asyncio.run(app.run_async())``, options given where they
do nothing, ``lagless run`` targets written as a path. Every finished record is committed once
its output is acknowledged; an option that would be ignored is one line instead."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import lagless
from lagless.app.runner import HURRY_GRACE_S
from lagless.engine.results.dlq import H_ERROR
from lagless.errors import ConfigError
from lagless.kafka.admin import committed_offsets
from lagless.testing import TestKafka
from tests.conftest import LAGLESS
from tests.integration.engine_helpers import REPO, ctrl_c_twice, hung_yet

pytestmark = pytest.mark.integration

TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "until_idle_s": 1.5,
}  # fmt: skip


def test_sigterm_drains_an_app_run_by_asyncio_run(lagless_kafka: TestKafka) -> None:
    total = 200
    source, out = lagless_kafka.topic(2), lagless_kafka.topic()
    lagless_kafka.produce(source, [f"r{i}" for i in range(total)])
    group = lagless_kafka.group()
    env = {**os.environ, "LAGLESS_BOOTSTRAP": lagless_kafka.bootstrap, "LAGLESS_TEST_GROUP": group,
           "LAGLESS_TEST_SOURCE": source, "LAGLESS_TEST_OUT": out,
           "LAGLESS_TEST_SLEEP_MS": "2000"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.app_helpers.async_copier"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not lagless_kafka.read(out):  # the first 50 are done, the next ones await 2 s
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr  # drained and returned, not killed by the signal
    processed = json.loads(stdout)["copy"]["processed"]
    assert 50 <= processed < total
    committed = sum(committed_offsets(lagless_kafka.conf, group, [source]).values())
    outputs = lagless_kafka.read(out)
    # what was awaiting at the signal finished: committed, its output acknowledged, once
    assert committed == processed == len(outputs) == len({r.value for r in outputs})


def test_a_second_signal_leaves_a_handler_hanging_on_its_poll_thread_behind(
    lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    """A fast batch handler runs its calls on its engine's poll thread (engine.inline); when one
    hangs there, the second Ctrl-C still ends ``lagless run``: the app waits HURRY_GRACE_S for
    the engine, names it, and exits 130."""
    source = lagless_kafka.topic()
    lagless_kafka.produce(source, [f"r{i}" for i in range(2000)])
    ledger = tmp_path / "ledger"
    env = {**os.environ, "LAGLESS_TEST_GROUP": lagless_kafka.group(),
           "LAGLESS_TEST_SOURCE": source, "LAGLESS_TEST_LEDGER": str(ledger)}  # fmt: skip
    proc = subprocess.Popen(
        [LAGLESS, "-b", lagless_kafka.bootstrap, "run", "tests.integration.app_helpers.hanging:app",
         "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )  # fmt: skip
    code, stdout, stderr = ctrl_c_twice(proc, lambda: hung_yet(ledger), limit_s=HURRY_GRACE_S + 10)
    assert code == 130, stderr[-2000:]
    assert "handler note did not stop" in stderr, stderr[-2000:]
    assert json.loads(stdout)["note"]["processed"] <= 2000 - 1, "the hung record never finished"


def test_a_bad_output_header_writes_none_of_the_records_outputs(lagless_kafka: TestKafka) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    lagless_kafka.produce(source, ["a"])
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(source, value=str, output=out, dlq=dlq, retries=2, retry_backoff_s=0.05)
    def tagged(text: str) -> list[lagless.Out]:
        return [lagless.Out(value="good"), lagless.Out(value="bad", headers={"n": 5})]

    summary = app.configured(lagless_kafka.settings).run()["tagged"]
    assert (summary.ok, summary.dlq) == (0, 1)
    [letter] = lagless_kafka.read(dlq, count=1)
    reason = (letter.header(H_ERROR) or b"").decode()
    assert "header 'n'" in reason and "int" in reason, reason
    assert lagless_kafka.read(out) == []  # no attempt wrote its first output


def test_a_metrics_host_without_a_port_is_refused_before_joining(lagless_kafka: TestKafka) -> None:
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(lagless_kafka.topic(), on_failure="stop")
    def noop(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match=r"metrics_host='0\.0\.0\.0' serves nothing without"):
        app.configured(lagless_kafka.settings).run(metrics_host="0.0.0.0")


def test_stop_asked_while_the_app_is_starting_stops_it(lagless_kafka: TestKafka) -> None:
    source = lagless_kafka.topic()
    lagless_kafka.produce(source, ["a"])
    app = lagless.App(group=lagless_kafka.group(), **{**TIMINGS, "until_idle_s": None})

    @app.handler(source, on_failure="stop")
    def noop(value: bytes) -> None: ...

    configured = app.configured(lagless_kafka.settings)
    runs = threading.Thread(target=configured.run)
    runs.start()
    while not configured.health["handlers"] and runs.is_alive():
        configured.stop()  # from another thread, as embedding code would, while it starts
        time.sleep(0.01)
    runs.join(30)
    stuck = runs.is_alive()
    configured.stop()  # let it end if the stop asked while starting was lost
    runs.join(60)
    assert not stuck  # the stop asked while it started was not dropped
