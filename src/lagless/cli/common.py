"""What every command shares: settings from the global options, output helpers."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from lagless.config import KafkaSettings, load_settings
from lagless.connect import resolve
from lagless.kafka.admin import check_reachable

err_console = Console(stderr=True)
out_console = Console()


@dataclass(frozen=True)
class GlobalOptions:
    bootstrap: str | None
    config: Path | None
    state_dir: Path | None


def setup_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("lagless.librdkafka").setLevel(
        logging.ERROR if verbosity < 2 else logging.DEBUG
    )
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def options(ctx: typer.Context) -> GlobalOptions:
    obj = ctx.find_root().obj
    if isinstance(obj, GlobalOptions):
        return obj
    return GlobalOptions(None, None, None)


def settings(ctx: typer.Context, *, check: bool = True) -> KafkaSettings:
    """Settings with a bootstrap (the embedded broker's when none was given), checked reachable."""
    opts = options(ctx)
    resolved = resolve(load_settings(opts.config, bootstrap=opts.bootstrap), opts.state_dir)
    if check:
        check_reachable(resolved.to_librdkafka())
    return resolved


def kafka_conf(ctx: typer.Context) -> dict[str, Any]:
    return settings(ctx).to_librdkafka()


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def interactive() -> bool:
    return sys.stderr.isatty()
