"""The ``lagless`` entry point: as light as can be, so that Ctrl-C while the CLI is still
importing (a second or two on a loaded machine) ends with one line and exit 130, not a
traceback through numpy's import.

A Ctrl-C during those imports can also be dropped by Python: raised in an import lock's
weakref callback, it is printed as "Exception ignored" and the import goes on. The
imports run with a SIGINT handler that notes each Ctrl-C before raising, so a dropped one still
ends the command."""

from __future__ import annotations

import signal
import sys
from types import FrameType


def main() -> None:
    caught: list[int] = []

    def ctrl_c(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        raise KeyboardInterrupt

    ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler  # not ignored
    if ours:
        signal.signal(signal.SIGINT, ctrl_c)
    try:
        from lagless.cli.app import main as run_app
    except KeyboardInterrupt:
        interrupted()
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:  # raised where Python dropped it
        interrupted()
    run_app()


def interrupted() -> None:
    sys.stderr.write("lagless: interrupted\n")
    sys.exit(130)
