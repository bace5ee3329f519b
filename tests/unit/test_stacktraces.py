"""A handler's traceback: bounded for the dead letter, logged in full once per kind."""

from __future__ import annotations

import logging

import pytest

from lagless import stacktraces


def raised(depth: int) -> BaseException:
    def down(n: int) -> None:
        if n == 0:
            raise ValueError("deep")
        down(n - 1)

    try:
        down(depth)
    except ValueError as exc:
        return exc
    raise AssertionError("not raised")


def test_a_long_traceback_keeps_its_end_and_says_it_was_cut() -> None:
    try:
        raise ValueError("start" + "x" * 5000 + " end")
    except ValueError as exc:
        text = stacktraces.stacktrace(exc, limit=2000)
    assert text.startswith("... (") and "characters cut)" in text.splitlines()[0]
    assert text.endswith("x end") and "Traceback" not in text
    assert len(text) < 2100
    short = stacktraces.stacktrace(raised(1))
    assert short.startswith("Traceback (most recent call last)")


def test_the_first_of_each_kind_is_a_warning_the_rest_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lagless.handler")
    errors = [raised(3) for _ in range(3)]  # one kind: same class, same raising line
    for exc in errors:
        stacktraces.log_failure(exc, 1, stacktraces.stacktrace(exc))
    levels = [r.levelno for r in caplog.records if r.name == "lagless.handler"]
    assert levels[-3:] in ([logging.WARNING, logging.INFO, logging.INFO],
                           [logging.INFO, logging.INFO, logging.INFO])  # fmt: skip
    assert "ValueError: deep" in caplog.records[-1].getMessage()
