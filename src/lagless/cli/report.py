"""`lagless report DIR`: the HTML report of a recorded run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lagless.cli.common import out_console
from lagless.observe.report import write_report


def report(
    directory: Annotated[
        Path, typer.Argument(help="run directory (from --record) or its timeline.jsonl")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="HTML file (default DIR/report.html)")
    ] = None,
    title: Annotated[str | None, typer.Option(help="report title")] = None,
) -> None:
    """Write one self-contained HTML report (plots and summary) of a recorded run."""
    path = write_report(directory, output, title)
    out_console.print(f"wrote {path}")
