"""`lagless run module:app` on the real broker: the consume flags override the app's options,
and outputs are committed only after acknowledgement, per record and per batch (kill -9 mid-run
loses nothing; the duplicates are exactly the first run's outputs above the committed
offsets)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from lagless.kafka.admin import committed_offsets
from lagless.testing import TestKafka
from tests.conftest import LAGLESS
from tests.integration.engine_helpers import GROUP_FLAGS, REPO

pytestmark = pytest.mark.integration

APP = "tests.integration.app_helpers.copier:app"


def lagless_run(kafka: TestKafka, source: str, out: str, group: str, *flags: str) -> list[str]:
    return [LAGLESS, "-b", kafka.bootstrap, "run", APP, "--group", group, *GROUP_FLAGS, *flags]


def app_env(source: str, out: str) -> dict[str, str]:
    env = {**os.environ, "LAGLESS_TEST_SOURCE": source, "LAGLESS_TEST_OUT": out}
    env.pop("LAGLESS_BOOTSTRAP", None)
    return env


def test_lagless_run_starts_an_app_with_flag_overrides(lagless_kafka: TestKafka) -> None:
    source, out = lagless_kafka.topic(2), lagless_kafka.topic()
    lagless_kafka.produce(source, [f"r{i}" for i in range(40)])
    group = lagless_kafka.group()
    cmd = lagless_run(lagless_kafka, source, out, group, "--until-idle", "1.5",
                      "--max-in-flight", "7", "--json")  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                          env=app_env(source, out), cwd=REPO, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["copy"]
    assert (summary["processed"], summary["dlq"]) == (40, 0)
    assert summary["max_in_flight_seen"] <= 7  # the flag won over the app's 50
    assert sorted(r.value for r in lagless_kafka.read(out, 40)) == sorted(
        f"r{i}".encode() for i in range(40)
    )
    assert committed_offsets(lagless_kafka.conf, group, [source])  # committed under --group


def test_lagless_run_bad_target_is_one_line_and_exit_2(lagless_kafka: TestKafka) -> None:
    for args, message in [
        (["nosuchmodule:app"], "cannot import 'nosuchmodule'"),
        (["tests.integration.app_helpers.copier:nope"], "copier has no attribute 'nope'"),
        (["tests.integration.app_helpers.copier:os"], "is module, not a lagless.App"),
        (["justamodule"], "is not module:attribute"),
        ([APP, "--batch-size", "5"], "handler copy: takes one record at a time"),
        (["tests/integration/app_helpers/copier.py:app"],
         "is a file path, not a module name: lagless run tests.integration.app_helpers.copier:app"),
        (["./tests/integration/app_helpers/copier:app"],
         "is a file path, not a module name: lagless run tests.integration.app_helpers.copier:app"),
        ([APP, "--metrics-host", "0.0.0.0", "--until-idle", "1"],
         "--metrics-host serves nothing without --metrics-port PORT"),
    ]:
        done = subprocess.run(
            [LAGLESS, "-b", lagless_kafka.bootstrap, "run", *args],
            capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_sigterm_drains_commits_and_leaves(lagless_kafka: TestKafka) -> None:
    total = 3000
    source, out = lagless_kafka.topic(3), lagless_kafka.topic(3)
    lagless_kafka.produce(source, [f"r{i}" for i in range(total)])
    group = lagless_kafka.group()
    proc = subprocess.Popen(
        lagless_run(lagless_kafka, source, out, group, "--json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**app_env(source, out), "LAGLESS_TEST_SLEEP_MS": "50"},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(lagless_kafka.read(out)) < 200:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    processed = json.loads(stdout)["copy"]["processed"]
    assert 200 <= processed < total  # stopped early, after draining what was in flight
    committed = sum(committed_offsets(lagless_kafka.conf, group, [source]).values())
    outputs = lagless_kafka.read(out)
    # every finished record committed, every output acknowledged, nothing written twice
    assert committed == processed == len(outputs) == len({r.value for r in outputs})


def test_a_second_signal_stops_at_once_with_exit_130(lagless_kafka: TestKafka) -> None:
    source, out = lagless_kafka.topic(), lagless_kafka.topic()
    lagless_kafka.produce(source, [f"r{i}" for i in range(200)])
    proc = subprocess.Popen(
        lagless_run(lagless_kafka, source, out, lagless_kafka.group(), "--json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**app_env(source, out), "LAGLESS_TEST_SLEEP_MS": "5000"},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not lagless_kafka.read(out):  # the first 50 are done, the next 50 sleep 5 s
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    hurried = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - hurried < 4.0  # did not wait for the records still sleeping
    assert json.loads(stdout)["copy"]["processed"] < 200


@pytest.mark.slow
@pytest.mark.parametrize("batch", [0, 10], ids=["per-record", "batch-handler"])
def test_kill_9_between_produce_and_ack_loses_nothing_and_bounds_duplicates(
    lagless_kafka: TestKafka, batch: int
) -> None:
    total = 2000
    source, out = lagless_kafka.topic(3), lagless_kafka.topic(3)
    lagless_kafka.produce(source, [f"r{i}" for i in range(total)])
    group = lagless_kafka.group()
    per_call = max(batch, 1)  # records per handler call: 50 calls in flight, 50 ms per record
    env = {**app_env(source, out), "LAGLESS_TEST_SLEEP_MS": str(50 * per_call),
           "LAGLESS_TEST_BATCH": str(batch)}  # fmt: skip
    first = subprocess.Popen(
        lagless_run(lagless_kafka, source, out, group, "--commit-interval", "0.2"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(lagless_kafka.read(out)) < total // 4:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the app produced too little in 60 s"
            time.sleep(0.2)
    finally:
        first.send_signal(signal.SIGKILL)  # 50 records in flight, outputs produced, not acked
        first.wait(10)
    time.sleep(1.0)  # requests already sent land (or not): the first run's outputs are final
    first_run = len(lagless_kafka.read(out))
    committed = sum(committed_offsets(lagless_kafka.conf, group, [source]).values())
    assert 0 < committed < total and first_run < total

    second = subprocess.run(
        lagless_run(lagless_kafka, source, out, group, "--until-idle", "2", "--json"),
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["copy"]["processed"] == total - committed

    outputs = Counter(r.value for r in lagless_kafka.read(out, total))
    assert set(outputs) == {f"r{i}".encode() for i in range(total)}  # nothing lost
    duplicates = sum(outputs.values()) - total
    print(f"committed at kill {committed}, outputs at kill {first_run}, duplicates {duplicates}")
    # exactly the first run's outputs of records above the committed offsets: a commit never
    # passed a record whose outputs were not acknowledged
    assert duplicates == first_run - committed
    in_flight = 50 * per_call  # records
    assert duplicates <= in_flight + 0.2 * 50 / 0.05  # + about one commit interval of work
