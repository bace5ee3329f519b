"""Running ``lagless consume``: signals, the live status line, the summary and exit codes.

Signals: the first SIGTERM or SIGINT (Ctrl-C) stops the engine gracefully (no new records;
in-flight ones finish within ``--shutdown-budget``; what finished is committed) and the run
exits 0 with its summary. A second one stops at once: nothing more is awaited, what finished
is committed, what still runs is abandoned (re-run by the next owner), exit 130.

A failure exit prints the summary too: with ``--json`` the object gains ``error`` (the same
line as on stderr); without it the plain summary goes to stdout before the error line.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from rich.progress import Progress as Bar
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

from lagless.cli.common import out_console, per_second, print_json
from lagless.engine import Engine, Progress, RunSummary
from lagless.engine.summary import ProgressFn
from lagless.errors import ConfigError, LaglessError
from lagless.signals import stop_on_signals

EXIT_INTERRUPTED = 130


def describe(summary: RunSummary) -> str:
    """The plain one-line summary (figures as defined in :class:`lagless.engine.summary.Timing`).
    End-to-end latency counts from each record's timestamp: records older than the run (a
    backlog) are said to be, their wait before the run included."""
    e2e = summary.e2e_ms
    latency = ""
    if e2e.p50 is not None:
        latency = f", e2e p50 {duration_ms(e2e.p50)} p99 {duration_ms(e2e.p99)}"
        if e2e.p50 > summary.wall_s * 1000:
            latency += " (records produced before this run started: their wait included)"
    join = f"joined in {summary.join_s} s, " if summary.join_s is not None else ""
    return (
        f"processed {summary.processed} records ({summary.dlq} to the DLQ, {summary.skipped} "
        f"skipped) in {summary.seconds} s of processing: {per_second(summary.records_per_s)} "
        f"records/s ({join}{summary.wall_s} s in all); {summary.commits} commits, "
        f"{summary.rebalances} rebalances, {summary.pauses} pauses, "
        f"max in flight {summary.max_in_flight_seen}{latency}"
    )


def duration_ms(ms: float | None) -> str:
    """A latency in ms, or in s / min once it is long."""
    if ms is None:
        return "?"
    if ms < 10_000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.1f} s" if ms < 600_000 else f"{ms / 60_000:.1f} min"


def report(summary: RunSummary, as_json: bool, error: LaglessError | None = None) -> None:
    """The summary on stdout: one JSON object (with ``error`` on failure) or one line."""
    if as_json:
        doc = summary.to_json()
        if error is not None:
            doc["error"] = str(error)
        print_json(doc)
    else:
        sys.stdout.write(describe(summary) + "\n")  # one line, never wrapped
        sys.stdout.flush()


def run_and_report(engine: Engine, *, as_json: bool) -> int:
    """Run ``engine`` under the signal rules, print its summary; the exit code (the engine's
    failure is raised after its summary is printed)."""
    with stop_on_signals(lambda: engine.stopping_requested, engine.request_stop, engine.hurry):
        try:
            summary = engine.run()
        except LaglessError as exc:
            if as_json or not isinstance(exc, ConfigError):  # bad usage: nothing ran, the error
                report(engine.summary(), as_json, exc)
            raise
        except KeyboardInterrupt:  # a second signal cut a handler call on this thread short
            if not engine.hurried:
                raise
            summary = engine.summary()
    report(summary, as_json)
    return EXIT_INTERRUPTED if engine.hurried else 0


@contextlib.contextmanager
def progress_line(enabled: bool) -> Iterator[ProgressFn | None]:
    """A one-line live status on the terminal while the engine runs (None when disabled)."""
    if not enabled:
        yield None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Bar(*columns, console=out_console, transient=True) as bar:
        task = bar.add_task("joining the group")

        def show(p: Progress) -> None:
            bar.update(
                task,
                description=(
                    f"{p.processed} processed ({per_second(p.records_per_s)}/s), "
                    f"{p.in_flight} in flight, "
                    f"{p.dlq} dlq, lag {p.lag_records}, {p.assigned} partitions, "
                    f"{p.paused} paused"
                ),
            )

        yield show
