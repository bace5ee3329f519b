"""Commit policy, backpressure bound, retry policy and the engine config boundary."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.engine.config import EngineConfig
from lagless.engine.handlers import DecodeError
from lagless.engine.intake.backpressure import Backlog, FlowControl
from lagless.engine.offsets.policy import CommitPolicy
from lagless.engine.record import Record
from lagless.engine.summary import Latency, LatencyLog
from lagless.engine.workers.retry import RetryPolicy, execute
from lagless.errors import ConfigError

RECORD = Record("t", 0, 5, None, b"{}", 1000)


def test_commit_policy_interval_and_count() -> None:
    policy = CommitPolicy(interval_s=1.0, every=3)
    policy.start(0.0)
    assert not policy.due(5.0), "nothing finished: nothing to commit"
    policy.finished()
    assert not policy.due(0.5)
    assert policy.due(1.0)
    policy.committed(1.0)
    policy.finished(3)
    assert policy.due(1.1)


def test_flow_control_rejects_when_full_and_resumes_at_half() -> None:
    flow = FlowControl(bound=10)
    assert flow.room(9) == 1
    assert flow.room(10) == 0  # full: what comes is kept, the partition paused
    backlog = Backlog(paused=True)
    assert not flow.may_resume(6, backlog)
    assert flow.may_resume(5, backlog)
    backlog.kept.append(object())  # type: ignore[arg-type]
    assert not flow.may_resume(0, backlog), "kept records go in before resuming"


def test_retry_backoff_doubles_to_a_cap() -> None:
    policy = RetryPolicy(retries=5, backoff_s=0.1, backoff_max_s=0.3)
    assert [policy.delay(a) for a in (1, 2, 3, 4)] == [0.1, 0.2, 0.3, 0.3]


def test_execute_retries_then_gives_up() -> None:
    calls: list[int] = []
    waits: list[float] = []

    def flaky(record: Record) -> None:
        calls.append(record.offset)
        raise RuntimeError("boom")

    outcome = execute(flaky, RECORD, RetryPolicy(retries=2, backoff_s=0.01), waits.append)
    assert not outcome.ok and not outcome.permanent and not outcome.aborted
    assert outcome.attempts == 3 and len(calls) == 3
    assert waits == [0.01, 0.02]
    assert (outcome.error_class, outcome.error_message) == ("RuntimeError", "boom")


def test_execute_succeeds_after_a_retry() -> None:
    attempts = iter([RuntimeError("once"), None])

    def handler(record: Record) -> None:
        exc = next(attempts)
        if exc:
            raise exc

    outcome = execute(handler, RECORD, RetryPolicy(retries=3, backoff_s=0.001), lambda s: False)
    assert outcome.ok and outcome.attempts == 2


def test_decode_error_is_never_retried() -> None:
    def bad(record: Record) -> None:
        raise DecodeError("not JSON")

    outcome = execute(bad, RECORD, RetryPolicy(retries=5), lambda s: False)
    assert outcome.permanent and outcome.attempts == 1


def test_stopping_aborts_the_backoff() -> None:
    def fail(record: Record) -> None:
        raise RuntimeError("x")

    outcome = execute(fail, RECORD, RetryPolicy(retries=5), lambda s: True)
    assert outcome.aborted and outcome.attempts == 1


def test_config_requires_an_explicit_failure_policy_without_dlq() -> None:
    with pytest.raises(ConfigError, match="stop or skip"):
        EngineConfig.build(topics=("a",), group="g")
    EngineConfig.build(topics=("a",), group="g", dlq_topic="dlq")
    with pytest.raises(ConfigError, match="only without"):
        EngineConfig.build(topics=("a",), group="g", dlq_topic="d", on_failure="skip")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"heartbeat_interval_ms": 20_000}, "heartbeat"),
        ({"max_poll_interval_ms": 5000, "session_timeout_ms": 6000}, "max poll"),
        ({"dlq_topic": "a", "on_failure": None}, "DLQ topic cannot be"),
        ({"ordering": "random"}, "ordering"),
    ],
)
def test_config_rejects_bad_values_in_one_line(values: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"topics": ("a",), "group": "g", "on_failure": "skip"}
    with pytest.raises(ConfigError, match=message) as info:
        EngineConfig.build(**{**base, **values})
    assert "\n" not in str(info.value)


def test_consumer_conf_is_derived_in_one_place() -> None:
    config = EngineConfig.build(
        topics=("a",), group="g", on_failure="stop", static_id="pod-1", assignor="range"
    )
    conf = config.consumer_conf({"bootstrap.servers": "h:1"})
    assert conf["group.id"] == "g"
    assert conf["group.instance.id"] == "pod-1"
    assert conf["partition.assignment.strategy"] == "range"
    assert conf["enable.auto.commit"] is False
    assert conf["fetch.queue.backoff.ms"] == 5
    assert conf["queued.min.messages"] == 5000
    assert conf["bootstrap.servers"] == "h:1"
    with pytest.raises(Exception):  # noqa: B017 (frozen)
        config.group = "x"  # type: ignore[misc]


def test_latency_log_is_exact_then_bounded() -> None:
    log = LatencyLog(capacity=100)
    for ms in range(1, 101):
        log.add(float(ms))
    assert log.summary() == Latency(51.0, 100.0, 100.0)
    for ms in range(101, 10_001):
        log.add(float(ms))
    summary = log.summary()
    assert summary.max == 10_000.0, "the max stays exact"
    assert summary.p50 is not None and 3000 < summary.p50 < 7000, "a uniform sample"
    assert len(log._ms) == 100


def test_latency_log_samples_many_at_once_once_full() -> None:
    log = LatencyLog(capacity=1000)
    log.add_many(np.arange(1, 601, dtype=np.float64))  # fills part of the log
    log.add_many(np.arange(601, 100_001, dtype=np.float64))  # fills it, then samples
    summary = log.summary()
    assert len(log._ms) == 1000 and log._seen == 100_000
    assert summary.max == 100_000.0, "the max stays exact"
    assert summary.p50 is not None and 40_000 < summary.p50 < 60_000, "a uniform sample"
    assert sorted(log._ms)[:600] != [float(v) for v in range(1, 601)], "early values replaced"
