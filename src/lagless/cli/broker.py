"""`lagless broker start|stop|status`: the embedded broker."""

from __future__ import annotations

from typing import Annotated

import typer

from lagless.broker.embedded import DEFAULT_PORT, EmbeddedBroker
from lagless.cli.common import options, out_console, print_json

app = typer.Typer(help="Run the embedded Kafka-compatible broker (Tansu).", no_args_is_help=True)


def _broker(ctx: typer.Context) -> EmbeddedBroker:
    return EmbeddedBroker(options(ctx).state_dir)


@app.command()
def start(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(min=1, max=65535, help="port on 127.0.0.1")] = DEFAULT_PORT,
    storage: Annotated[
        str, typer.Option(help="'memory' (default) or an s3:// URL (AWS_* variables apply)")
    ] = "memory",
) -> None:
    """Start the broker in the background (no-op if it already runs)."""
    state = _broker(ctx).start(port=port, storage=storage)
    out_console.print(
        f"broker running at {state.bootstrap} (pid {state.pid}, log {state.log_path})"
    )


@app.command()
def stop(
    ctx: typer.Context,
    purge: Annotated[
        bool, typer.Option("--purge", help="also delete the state directory's files (the log)")
    ] = False,
) -> None:
    """Stop the broker (SIGTERM, SIGKILL after 10 s). It keeps its state directory (the log:
    --purge deletes it); a memory broker's topics and records end with it, an s3:// one's stay
    in the bucket."""
    broker = _broker(ctx)
    state = broker.stop()
    out_console.print("broker stopped" if state else "broker was not running")
    if purge:
        removed = broker.purge()
        out_console.print(f"removed {len(removed)} files from {broker.state_dir}")


@app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Print the bootstrap address, or say it is not running (exit 1 if dead)."""
    state = _broker(ctx).status()
    if as_json:
        print_json(
            {"running": False}
            if state is None
            else {
                "running": True,
                "bootstrap": state.bootstrap,
                "pid": state.pid,
                "storage": state.storage,
                "log": state.log_path,
            }
        )
    elif state is None:
        out_console.print("broker is not running")
    else:
        print(state.bootstrap)
