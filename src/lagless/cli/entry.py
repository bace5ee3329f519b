"""The ``lagless`` entry point: as light as can be, so that Ctrl-C while the CLI is still
importing (a second or two on a loaded machine) ends with one line and exit 130, not a
traceback through numpy's import."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from lagless.cli.app import main as run_app
    except KeyboardInterrupt:
        sys.stderr.write("lagless: interrupted\n")
        sys.exit(130)
    run_app()
