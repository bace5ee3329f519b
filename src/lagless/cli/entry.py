"""The ``lagless`` entry point: as light as can be, so that Ctrl-C while the CLI is still
importing (a second or two on a loaded machine) ends with one line and exit 130, not a
traceback through numpy's import.

A Ctrl-C during those imports can also be dropped by Python: raised in an import lock's
weakref callback, it is printed as "Exception ignored" and the import goes on. The
imports run with a SIGINT handler that notes each Ctrl-C before raising, so a dropped one still
ends the command. SIGTERM the same way (``lagless: terminated``, exit 143), until the command
sets up a stop of its own (a graceful drain, a flush)."""

from __future__ import annotations

import signal
import sys
from types import FrameType

from lagless.signals import Terminated, ending, ignored, raise_terminated


def main() -> None:
    caught: list[int] = []

    def stop_signal(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated

    # SIGINT raises KeyboardInterrupt, SIGTERM Terminated: each ends the command with one line
    # until the command sets a stop of its own; a signal the process was started ignoring (a
    # background job of a script ignores SIGINT) stays ignored
    ours = [s for s in (signal.SIGINT, signal.SIGTERM) if not ignored(s)]
    for sig in ours:
        signal.signal(sig, stop_signal)
    try:
        from lagless.cli.app import main as run_app
    except KeyboardInterrupt:
        ended(signal.SIGINT)
    except Terminated:
        ended(signal.SIGTERM)
    finally:
        if signal.SIGINT in ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if signal.SIGTERM in ours:
            signal.signal(signal.SIGTERM, raise_terminated)
    if caught:  # raised where Python dropped it
        ended(caught[0])
    run_app()


def ended(signum: int) -> None:
    """One line and the exit code of a command ended by ``signum`` (see ``ending``)."""
    what, code = ending(signum)
    sys.stderr.write(f"lagless: {what}\n")
    sys.exit(code)
