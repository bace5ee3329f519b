"""What every command shares: settings from the global options, output helpers."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from lagless.config import KafkaSettings, load_settings
from lagless.connect import resolve
from lagless.errors import ConfigError
from lagless.kafka.admin import check_reachable
from lagless.signals import ending, ignored

err_console = Console(stderr=True, soft_wrap=True)  # lines are never hard-wrapped
out_console = Console(soft_wrap=True)  # piped output stays one line per line


@dataclass(frozen=True)
class GlobalOptions:
    """The global options (see :mod:`lagless.cli.globals`); ``librdkafka``: the ``-X``
    properties, laid over the settings' own for every client."""

    bootstrap: str | None
    config: Path | None
    state_dir: Path | None
    librdkafka: Mapping[str, str] = field(default_factory=dict)


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
    loaded = with_properties(load_settings(opts.config, bootstrap=opts.bootstrap), opts)
    resolved = resolve(loaded, opts.state_dir, port=port)
    if resolved.fallback_note is not None:
        note(resolved.fallback_note)
    if check:
        check_reachable(resolved.settings.to_librdkafka())
    return resolved.settings


def with_properties(base: KafkaSettings, opts: GlobalOptions) -> KafkaSettings:
    """``base`` with the ``-X`` properties laid over its own librdkafka properties."""
    if not opts.librdkafka:
        return base
    return base.model_copy(update={"librdkafka": {**base.librdkafka, **opts.librdkafka}})


def kafka_conf(ctx: typer.Context, port: int | None = None) -> dict[str, Any]:
    return settings(ctx, port=port).to_librdkafka()


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (by flag or variable), not just its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


class Stop(threading.Event):
    """Set by SIGINT (Ctrl-C) or SIGTERM while :func:`signals_stop` is on; ``signum``: the
    first of them that came; :meth:`hurried` after a second one."""

    def __init__(self) -> None:
        super().__init__()
        self.signum: int | None = None
        self.signals = 0

    def by(self, signum: int, _frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        self.signals += 1
        self.set()

    def hurried(self) -> bool:
        """Whether a second signal came: stop waiting (for deliveries, ...) at once."""
        return self.signals > 1

    @property
    def reason(self) -> str:
        """``interrupted`` (Ctrl-C, or none came: a KeyboardInterrupt) or ``terminated``."""
        return ending(self.signum or signal.SIGINT)[0]

    @property
    def exit_code(self) -> int:
        """130 after Ctrl-C (or none: a KeyboardInterrupt), 143 after SIGTERM."""
        return ending(self.signum or signal.SIGINT)[1]


@contextlib.contextmanager
def signals_stop(stop: Stop) -> Iterator[Stop]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM set ``stop``: not a KeyboardInterrupt in the
    middle of a client call (confluent-kafka's ``poll`` can fail with a SystemError then), nor
    a process killed with records in its buffers. A signal the process was started ignoring
    stays ignored (:func:`lagless.signals.ignored`)."""
    stops = [s for s in (signal.SIGINT, signal.SIGTERM) if not ignored(s)]
    previous = {s: signal.signal(s, stop.by) for s in stops}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


UNKNOWN = "?"  # a cell the cluster did not answer
NONE = "-"  # a cell with nothing in it (no commit, no owner)


def cell(value: object) -> str:
    """One table cell, the one way every table writes it: ``-`` for nothing, a count as is,
    seconds (any duration) with one decimal."""
    if value is None:
        return NONE
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a table as Kafka's own tools print them: upper-case headers, columns
    left-aligned and separated by spaces, never wrapped nor cut; so ``awk '{print $N}'``
    reads the same column in a terminal, a pipe or a file."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return [
        " ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (headers, *rows)
    ]


def print_columns(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print :func:`columns` on stdout."""
    sys.stdout.write("".join(line + "\n" for line in columns(headers, rows)))
    sys.stdout.flush()


def interactive() -> bool:
    return sys.stderr.isatty()


def one_name(what: str, positional: str | None, option: str | None) -> str:
    """A name given as the positional argument or as its ``--WHAT`` alias (the spelling of
    kafka-topics / kafka-consumer-groups), once; ConfigError (exit 2) if neither or both
    differ."""
    if positional is not None and option is not None and positional != option:
        raise ConfigError(f"two {what}s given ({positional!r} and --{what} {option!r}): give one")
    name = positional if positional is not None else option
    if not name:
        raise ConfigError(f"give the {what}: {what.upper()} or --{what} {what.upper()}")
    return name


def per_second(rate: float) -> str:
    """A rate, the one way every line writes it: enough digits that a slow run does not read
    as zero (``0.43``, ``12.5``, ``3105``); the caller adds the unit."""
    if rate >= 100:
        return f"{rate:.0f}"
    if rate >= 1:
        return f"{rate:.1f}"
    return f"{rate:.2g}" if rate > 0 else "0"
