"""IsolatedCalls: a call in a child process; a crash or a hang there fails that call with one
line and the next call gets a new child (the console's pages read records this way)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from lagless.errors import ClusterError, LaglessError
from lagless.kafka.isolated import IsolatedCalls


def pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def hang() -> None:
    time.sleep(60)


def refuse() -> None:
    raise LaglessError("no such topic 'x'")


@pytest.fixture
def calls() -> Iterator[IsolatedCalls]:
    made = IsolatedCalls("test reader", timeout=3.0)
    yield made
    made.close()


def test_a_call_runs_in_one_child_kept_across_calls(calls: IsolatedCalls) -> None:
    first_pid, doubled = calls.call(pid_and, 21)
    assert doubled == 42 and first_pid != os.getpid()
    assert calls.call(pid_and, 1) == (first_pid, 2)
    assert calls.restarts == 0


def test_a_crash_fails_that_call_and_the_next_call_gets_a_new_child(
    calls: IsolatedCalls,
) -> None:
    before, _ = calls.call(pid_and, 1)
    with pytest.raises(
        ClusterError, match=r"test reader process died \(exit code -11\) during crash"
    ):
        calls.call(crash)
    after, value = calls.call(pid_and, 2)
    assert value == 4 and after != before and calls.restarts == 1


def test_a_hang_fails_after_the_timeout_and_the_hung_child_is_killed(
    calls: IsolatedCalls,
) -> None:
    before, _ = calls.call(pid_and, 1)
    started = time.monotonic()
    with pytest.raises(ClusterError, match="did not answer during hang"):
        calls.call(hang)
    assert time.monotonic() - started < 20
    with pytest.raises(ProcessLookupError):
        os.kill(before, 0)  # killed (and reaped), not left sleeping
    assert calls.call(pid_and, 3)[1] == 6


def test_a_lagless_error_in_the_child_is_its_one_line_and_keeps_the_child(
    calls: IsolatedCalls,
) -> None:
    before, _ = calls.call(pid_and, 1)
    with pytest.raises(ClusterError, match="no such topic 'x'"):
        calls.call(refuse)
    assert calls.call(pid_and, 1)[0] == before and calls.restarts == 0
