"""What every command shares: settings from the global options, output helpers."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from lagless.config import KafkaSettings, load_settings
from lagless.connect import resolve
from lagless.kafka.admin import check_reachable

err_console = Console(stderr=True, soft_wrap=True)  # lines are never hard-wrapped
out_console = Console(soft_wrap=True)  # piped output stays one line per line


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
    logging.getLogger("py4j.clientserver").addFilter(not_a_stopped_batch)


def not_a_stopped_batch(record: logging.LogRecord) -> bool:
    """py4j logs the traceback of every exception a Python callback raises: a micro-batch
    the user's stop interrupted (``lagless.spark.pipeline.stopping.BatchInterrupted``) is not an
    error."""
    error = record.exc_info[1] if record.exc_info else None
    return type(error).__name__ != "BatchInterrupted"


def options(ctx: typer.Context) -> GlobalOptions:
    obj = ctx.find_root().obj
    if isinstance(obj, GlobalOptions):
        return obj
    return GlobalOptions(None, None, None)


def warn(message: str) -> None:
    """One warning line on stderr."""
    sys.stderr.write(f"lagless: warning: {message}\n")
    sys.stderr.flush()


def note(message: str) -> None:
    """One informational line on stderr (stdout stays for the command's output)."""
    sys.stderr.write(f"lagless: {message}\n")
    sys.stderr.flush()


def settings(ctx: typer.Context, *, check: bool = True, port: int | None = None) -> KafkaSettings:
    """Settings with a bootstrap, checked reachable. With none configured, the embedded
    broker's (started if needed, on ``port`` when given), said on stderr."""
    opts = options(ctx)
    resolved = resolve(
        load_settings(opts.config, bootstrap=opts.bootstrap), opts.state_dir, port=port
    )
    if resolved.fallback_note is not None:
        note(resolved.fallback_note)
    if check:
        check_reachable(resolved.settings.to_librdkafka())
    return resolved.settings


def kafka_conf(ctx: typer.Context, port: int | None = None) -> dict[str, Any]:
    return settings(ctx, port=port).to_librdkafka()


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (by flag or variable), not just its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


@contextlib.contextmanager
def ctrl_c_sets(stop: threading.Event) -> Iterator[threading.Event]:
    """While inside, Ctrl-C (SIGINT) sets ``stop`` instead of raising KeyboardInterrupt in the
    middle of a client call (confluent-kafka's ``poll`` can fail with a SystemError then)."""
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def print_columns(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Plain aligned columns (as Kafka's own tools print them): never wrapped nor cut, so
    they read the same in a terminal, a pipe or a file."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    for line in (headers, *rows):
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        sys.stdout.write(" ".join(cells).rstrip() + "\n")
    sys.stdout.flush()


def interactive() -> bool:
    return sys.stderr.isatty()
