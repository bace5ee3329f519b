"""SIGTERM/SIGINT while consumers run: the first stops them gracefully, a second at once.

The first signal asks for a graceful stop: every engine drains (in-flight records finish within
``shutdown_budget_s``), commits what finished and leaves its group. A second one hurries them:
nothing more is awaited, what finished is committed, what still runs is abandoned (re-run by
the next owner of its partition). ``lagless consume`` (one engine) and an App (several) share
these rules.

A signal the process was started with ignored stays ignored: a job a non-interactive shell starts
in the background (``lagless consume ... &`` in a script) ignores SIGINT, so that a Ctrl-C at the
terminal reaches only the foreground command, and lagless keeps to that (:func:`ignored`);
SIGTERM still stops it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_on_signals(
    stopping: Callable[[], bool],
    stop: Callable[[], None],
    hurry: Callable[[], None],
    signals: Sequence[signal.Signals] = STOP_SIGNALS,
) -> Iterator[None]:
    """While the block runs: one of ``signals`` calls ``stop``, or ``hurry`` once
    ``stopping()`` is true. Only from the main thread (where Python delivers signals);
    elsewhere the block runs without handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stopping():
            hurry()
        else:
            stop()

    previous = {sig: signal.signal(sig, handle) for sig in signals if not ignored(sig)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Terminated(BaseException):
    """SIGTERM where no stop was set up yet (the CLI while it starts): as KeyboardInterrupt
    for SIGINT, the command ends with one line and exit 143 (see :mod:`lagless.cli.entry`)."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: raise :class:`Terminated`."""
    raise Terminated


def ending(signum: int) -> tuple[str, int]:
    """What a command ended by a stop signal says and exits with: ``interrupted``, 130 for
    SIGINT (Ctrl-C); ``terminated``, 143 for SIGTERM (128 + the signal's number)."""
    return ("terminated" if signum == signal.SIGTERM else "interrupted"), 128 + signum


def ignored(sig: signal.Signals) -> bool:
    """Whether this process ignores ``sig``, as it was started (see the module's docstring):
    left so by every handler lagless sets."""
    return signal.getsignal(sig) is signal.SIG_IGN


def unclaimed_signals() -> list[signal.Signals]:
    """The stop signals still at Python's defaults (SIGTERM terminating the process at once,
    SIGINT raising KeyboardInterrupt): those an app inside someone's event loop takes over.
    A handler already set is the loop owner's (``asyncio.run`` cancels its main task on
    SIGINT, which stops the app too), so it is left alone."""
    defaults = {
        signal.SIGTERM: (signal.SIG_DFL, raise_terminated),  # the latter: lagless's CLI's
        signal.SIGINT: (signal.default_int_handler,),
    }
    return [sig for sig in STOP_SIGNALS if signal.getsignal(sig) in defaults[sig]]
