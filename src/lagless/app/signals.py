"""SIGTERM/SIGINT while an app runs: the first stops it gracefully, a second at once.

The first signal sets the stop event: every engine drains (in-flight records finish within
``shutdown_budget_s``), commits what finished and leaves its group. A second one hurries them:
nothing more is awaited, what finished is committed, what still runs is abandoned (re-run by
the next owner of its partition). The rules of ``lagless consume``, for several engines.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event, hurry: Callable[[], None]) -> Iterator[None]:
    """Install the handlers while the block runs (only from the main thread, where Python
    delivers signals; elsewhere the block runs without them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            hurry()
        else:
            stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
