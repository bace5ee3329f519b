"""The stop signals' handlers: set while a run lasts, restored after, never over a signal the
process was started ignoring (a background job of a non-interactive shell ignores SIGINT)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from lagless.cli.common import Stop, signals_stop
from lagless.signals import ignored, raise_terminated, stop_on_signals, unclaimed_signals


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_handlers_are_set_inside_and_restored_after() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with stop_on_signals(lambda: False, lambda: None, lambda: None):
        assert signal.getsignal(signal.SIGINT) not in before
        assert signal.getsignal(signal.SIGTERM) not in before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    with signals_stop(Stop()) as stop:
        assert signal.getsignal(signal.SIGINT) is not before[0]
        assert signal.getsignal(signal.SIGTERM) is not before[1]
        signal.raise_signal(signal.SIGTERM)  # sets stop, kills nothing
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert stop.is_set() and stop.exit_code == 143 and stop.reason == "terminated"


def test_the_first_signal_names_the_stop() -> None:
    stop = Stop()
    assert stop.exit_code == 130 and stop.reason == "interrupted"  # a KeyboardInterrupt's
    stop.by(signal.SIGINT, None)
    stop.by(signal.SIGTERM, None)
    assert stop.is_set() and stop.exit_code == 130 and stop.reason == "interrupted"


@pytest.mark.usefixtures("sigint_ignored")
def test_a_signal_ignored_from_the_start_stays_ignored() -> None:
    assert ignored(signal.SIGINT) and not ignored(signal.SIGTERM)
    term = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(lambda: False, lambda: None, lambda: None):
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is not term  # SIGTERM still stops the run
    with signals_stop(Stop()) as stop:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is not term
        assert not stop.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_the_clis_sigterm_handler_is_no_claim_on_sigterm() -> None:
    """``lagless run``'s SIGTERM handler (it raises Terminated while a command starts) is a
    default an App still takes over in an event loop; a loop owner's handler is not."""
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        assert signal.SIGTERM in unclaimed_signals()
        signal.signal(signal.SIGTERM, lambda *_: None)
        assert signal.SIGTERM not in unclaimed_signals()
    finally:
        signal.signal(signal.SIGTERM, previous)
