"""The stop signals' handlers: set while a run lasts, restored after, never over a signal the
process was started ignoring (a background job of a non-interactive shell ignores SIGINT)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from lagless.cli.common import ctrl_c_sets
from lagless.signals import ignored, stop_on_signals


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
    with ctrl_c_sets(threading.Event()):
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert signal.getsignal(signal.SIGINT) is before[0]


@pytest.mark.usefixtures("sigint_ignored")
def test_a_signal_ignored_from_the_start_stays_ignored() -> None:
    assert ignored(signal.SIGINT) and not ignored(signal.SIGTERM)
    term = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(lambda: False, lambda: None, lambda: None):
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is not term  # SIGTERM still stops the run
    with ctrl_c_sets(threading.Event()) as stop:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert not stop.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
