"""What `lagless run` says while it runs: the cluster, each handler, where metrics are served
(lines on stderr at start), when each handler joins its group and how many partitions it
holds (a line each time that changes), and on a terminal a live status line."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from rich.progress import Progress as Bar
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

from lagless.app import App
from lagless.cli.common import err_console, note, per_second
from lagless.cli.consume import run_settings
from lagless.config import KafkaSettings
from lagless.engine import EngineConfig, Progress
from lagless.observe.instance import Publisher, StatusBoard
from lagless.observe.metrics import Metrics


def handler_line(name: str, config: EngineConfig, output: str | None) -> str:
    """One handler as ``lagless run`` announces it."""
    where = f"dead letters to {config.dlq_topic}" if config.dlq_topic else (
        f"a failed record: {config.on_failure.value if config.on_failure else 'stop'}"
    )  # fmt: skip
    out = f", outputs to {output}" if output else ""
    return (
        f"handler {name}: {', '.join(config.topics)} in group {config.group}{out}, {where}, "
        f"ordering {config.ordering.value}, up to {config.max_in_flight} in flight"
    )


def announce(
    target: str, app: App, connection: KafkaSettings, metrics: tuple[str, int | None]
) -> None:
    """The start-up lines: cluster, handlers, metrics and health address."""
    note(f"running {target} on {connection.describe()}")
    for spec, config in zip(app.specs, app.engine_configs(), strict=True):
        note(handler_line(spec.name, config, spec.output))
    host, port = metrics
    if port is not None:
        note(f"metrics and health at http://{host}:{port} (/metrics, /healthz, /readyz, /status)")


class RunStatus:
    """``on_progress`` for :meth:`App.run`: a line when a handler's partitions change, and the
    live status line (``bar``) on a terminal."""

    def __init__(self, handlers: Sequence[str], bar: Bar | None = None) -> None:
        self._assigned: dict[str, int] = dict.fromkeys(handlers, 0)
        self._latest: dict[str, Progress] = {}
        self._bar = bar
        self._task = bar.add_task("joining") if bar is not None else None
        self._lock = threading.Lock()

    def __call__(self, name: str, progress: Progress) -> None:
        with self._lock:
            before = self._assigned.get(name, 0)
            self._assigned[name] = progress.assigned
            self._latest[name] = progress
            if progress.assigned != before:
                self._say(name, before, progress)
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, description=self.line())

    def _say(self, name: str, before: int, progress: Progress) -> None:
        if before == 0:
            text = (
                f"handler {name} joined its group: {progress.assigned} partitions "
                f"({progress.seconds:.1f} s after start)"
            )
        elif progress.assigned == 0:
            text = f"handler {name}: its partitions were revoked (rebalance)"
        else:
            text = f"handler {name}: now {progress.assigned} partitions (was {before})"
        if self._bar is not None:
            err_console.print(f"lagless: {text}", highlight=False, markup=False)
        else:
            note(text)

    def line(self) -> str:
        """The live status: per handler, processed (rate), in flight, DLQ, lag, partitions."""
        return "; ".join(
            f"{name}: {p.processed} processed ({per_second(p.records_per_s)}/s), "
            f"{p.in_flight} in flight, {p.dlq} dlq, lag {p.lag_records}, {p.assigned} partitions"
            for name, p in sorted(self._latest.items())
        )


@contextlib.contextmanager
def run_status(handlers: Sequence[str], live: bool) -> Iterator[RunStatus]:
    """A :class:`RunStatus`, with the live status line on stderr when ``live``."""
    if not live:
        yield RunStatus(handlers)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Bar(*columns, console=err_console, transient=True) as bar:
        yield RunStatus(handlers, bar)


class RunRecording:
    """``lagless run --record DIR``: each handler's metrics sampled into a run directory
    (DIR itself for one handler, DIR/HANDLER for several), for ``lagless report``."""

    def __init__(self, directory: Path | None, target: str, app: App) -> None:
        self._directory = directory
        self._target = target
        self._configs = dict(zip((s.name for s in app.specs), app.engine_configs(), strict=True))
        self._stack = contextlib.ExitStack()
        self._started = False

    def directories(self) -> dict[str, Path]:
        if self._directory is None:
            return {}
        one = len(self._configs) == 1
        return {n: self._directory if one else self._directory / n for n in self._configs}

    def start(self, metrics: Mapping[str, Metrics]) -> None:
        from lagless.observe.timeline import Recorder

        self._started = True
        for name, directory in self.directories().items():
            config = self._configs[name]
            settings = {**run_settings(config, name), "run": f"lagless run {self._target}"}
            self._stack.enter_context(Recorder(metrics[name], directory, settings=settings))

    def __enter__(self) -> RunRecording:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        for directory in self.directories().values() if self._started else ():
            note(f"run recorded in {directory}: lagless report {directory}")


class StatusPublishing:
    """Each handler's status board (the runner's, :attr:`lagless.app.runner.Runner.boards`)
    published in the state directory while ``lagless run`` runs, so ``lagless ui`` knows the
    owners of its partitions (as for ``lagless consume``)."""

    def __init__(self, state_dir: Path) -> None:
        self._state_dir = state_dir
        self._stack = contextlib.ExitStack()

    def start(self, boards: Mapping[str, StatusBoard]) -> None:
        for board in boards.values():
            self._stack.enter_context(Publisher(board, self._state_dir))

    def __enter__(self) -> StatusPublishing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
