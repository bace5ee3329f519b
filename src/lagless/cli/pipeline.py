"""`lagless pipeline` (placeholder until its issue lands)."""

from __future__ import annotations

import typer

from lagless.errors import LaglessError

app = typer.Typer(help="The Spark pipeline: Kafka -> PySpark -> Parquet.", no_args_is_help=True)


@app.command("run")
def run() -> None:
    """Not built yet."""
    raise LaglessError("'lagless pipeline run' is not built yet")
