"""`lagless ui`: the live web console (docs/ui.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lagless.broker.embedded import default_state_dir
from lagless.cli.common import Stop, note, options, settings, signals_stop
from lagless.errors import ConfigError
from lagless.kafka.cluster import describe_cluster
from lagless.ui.auth import Guard
from lagless.ui.console import Console, ConsoleConfig
from lagless.ui.server import ConsoleServer


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``30s``, ``15m``, ``24h`` or ``7d``; ConfigError otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    raw = text.strip().lower()
    scale = units.get(raw[-1:])
    number = raw[:-1] if scale else raw
    try:
        value = float(number) * (scale or 1)
    except ValueError:
        raise ConfigError(f"--retention {text!r}: give seconds or 30m, 24h, 7d") from None
    if value <= 0:
        raise ConfigError(f"--retention {text!r} must be positive")
    return value


def check_target(target: str) -> str:
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--scrape {target!r} is not HOST:PORT")
    return target


def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="port to serve the console on (0: any free)")] = 8080,
    host: Annotated[
        str, typer.Option(help="address to bind; other than loopback needs --token")
    ] = "127.0.0.1",
    interval: Annotated[float, typer.Option(help="seconds between samples of the cluster")] = 1.0,
    retention: Annotated[
        str, typer.Option(help="history kept in the store: seconds, or 30m, 24h, 7d")
    ] = "24h",
    max_store_mb: Annotated[int, typer.Option(help="the store's size bound in MB")] = 256,
    scrape: Annotated[
        list[str] | None,
        typer.Option(help="HOST:PORT of an engine's metrics endpoint to watch (repeat)"),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="LAGLESS_UI_TOKEN", help="token every request needs (env LAGLESS_UI_TOKEN)"
        ),
    ] = None,
    allow_writes: Annotated[
        bool, typer.Option(help="allow offset resets and deletes (POST, CSRF, confirmation)")
    ] = False,
    lab_dir: Annotated[Path, typer.Option(help="where lab runs are")] = Path("out/lab"),
) -> None:
    """Serve a live web console of the cluster: groups, lag (records and seconds), rebalances,
    owners, topics, lab runs, dead letters; a JSON API and /metrics for every group."""
    if not 0 <= port < 65536:
        raise ConfigError(f"--port {port} is not a port")
    if not 0.1 <= interval <= 3600:
        raise ConfigError(f"--interval {interval} must be between 0.1 and 3600 seconds")
    if max_store_mb < 1:
        raise ConfigError("--max-store-mb must be at least 1")
    guard = Guard(host, token or None, allow_writes)
    targets = tuple(check_target(t) for t in scrape or ())
    kafka = settings(ctx)
    conf = kafka.to_librdkafka()
    state_dir = options(ctx).state_dir or default_state_dir()
    config = ConsoleConfig(
        state_dir=state_dir, interval=interval, retention=parse_duration(retention),
        max_bytes=max_store_mb * 1024 * 1024, scrape=targets, lab_dir=lab_dir,
        cluster_name=describe_cluster(conf).name,
    )  # fmt: skip
    console = Console(conf, config)
    server = ConsoleServer(console, guard, host, port)
    with signals_stop(Stop()) as stop:
        console.start()
        server.start()
        note(f"console of {config.cluster_name} at {server.url} (store {console.store.path}; "
             f"{'writes allowed' if allow_writes else 'read-only'}; Ctrl-C stops)")  # fmt: skip
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        try:
            while not stop.wait(0.5):
                pass
        finally:
            server.stop()
            console.stop()
    note("console stopped")
