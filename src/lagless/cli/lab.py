"""`lagless lab rebalance`: the rolling-update experiment, default settings against mitigations."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from lagless.cli.common import err_console, interactive, kafka_conf, out_console, print_json
from lagless.errors import LaglessError
from lagless.kafka.cluster import describe_cluster
from lagless.lab.measures import Improvements, improvement
from lagless.lab.model import ScenarioData, ScenarioReport
from lagless.lab.page import render_page
from lagless.lab.runner import LabConfig, ScenarioRun, ShowFn, Status
from lagless.lab.scenarios import DEFAULT_SCENARIOS, parse_scenarios

app = typer.Typer(help="Experiments on a live cluster.", no_args_is_help=True)

BEST_KEYS = ("scenario", "figure", "ratio")
TABLE_WIDTH = 132  # the table is not wrapped into 80 columns when piped


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(broker: str, reports: list[ScenarioReport]) -> Table:
    """The article's table: scenarios as rows, the measures as columns."""
    out = Table(title=f"rebalance lab on {broker}", title_justify="left")
    for name in (
        "scenario", "rebalances", "rebalance s\navg / max", "max\nunconsumed s",
        "max lag\nrecords", "max lag\ns", "e2e ms\np50 / p99 / max", "lost", "dup", "overlaps",
    ):  # fmt: skip
        out.add_column(name, justify="left" if name == "scenario" else "right")
    for r in reports:
        m = r.measures
        if m is None:
            out.add_row(r.scenario, *["-"] * 9)
            continue
        out.add_row(
            r.scenario,
            str(m.rebalances),
            f"{_fmt(m.rebalance_s.avg)} / {_fmt(m.rebalance_s.max)}",
            _fmt(m.max_unconsumed_s),
            str(m.max_lag_records),
            _fmt(m.max_lag_s),
            f"{_fmt(m.e2e_ms.p50, 0)} / {_fmt(m.e2e_ms.p99, 0)} / {_fmt(m.e2e_ms.max, 0)}",
            str(m.lost),
            str(m.duplicated),
            str(m.ownership_overlaps),
        )
    return out


def notes(reports: list[ScenarioReport], best: Improvements) -> list[str]:
    lines = [f"{r.scenario}: {r.note}" for r in reports if r.note]
    found = best.best
    if found is not None:
        scenario, figure, ratio = found
        lines.append(f"best improvement vs {best.baseline}: {ratio:.1f}x ({figure}, {scenario})")
    return lines


@contextlib.contextmanager
def progress(enabled: bool) -> Iterator[ShowFn]:
    """A live status line on a terminal; otherwise one stderr line per phase."""
    if not enabled:
        last: list[str] = [""]

        def log_phase(status: Status) -> None:
            line = f"{status.scenario}: {status.phase}"
            if line != last[0]:
                last[0] = line
                sys.stderr.write(f"lab: {line}\n")

        yield log_phase
        return
    with Live(Text("starting"), console=err_console, transient=True, refresh_per_second=4) as live:

        def show(status: Status) -> None:
            lag = "-" if status.lag_records is None else f"{status.lag_records}"
            lag_s = "" if status.lag_s is None else f" ({status.lag_s:.1f} s)"
            ready = " ".join(f"{name}{'*' if ok else '?'}" for name, ok in status.instances)
            live.update(Text(f"{status.scenario} | {status.phase} | lag {lag}{lag_s} | {ready}"))

        yield show


@app.command("rebalance")
def rebalance(
    ctx: typer.Context,
    scenarios: Annotated[
        str, typer.Option(help=f"comma-separated, from: {', '.join(DEFAULT_SCENARIOS)}")
    ] = ",".join(DEFAULT_SCENARIOS),
    instances: Annotated[int, typer.Option(help="instances of the service (N)")] = 3,
    partitions: Annotated[int, typer.Option(help="partitions of each fresh topic (P)")] = 12,
    rate: Annotated[float, typer.Option(help="records per second produced (R)")] = 1000.0,
    work_ms: Annotated[int, typer.Option(help="milliseconds of work per record (W)")] = 1,
    warmup: Annotated[float, typer.Option(help="seconds of steady state before rolling")] = 15.0,
    rollouts: Annotated[int, typer.Option(help="rollouts (each restarts every instance)")] = 1,
    max_surge: Annotated[
        int | None, typer.Option(help="override every scenario's maxSurge")
    ] = None,
    max_unavailable: Annotated[
        int | None, typer.Option(help="override every scenario's maxUnavailable")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="directory for the instances' records and report.html")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object at the end")] = (
        False
    ),
) -> None:
    """Roll a consumer service under load, per scenario; measure rebalances, lag, latency."""
    chosen = parse_scenarios(scenarios)
    config = LabConfig(
        instances=instances, partitions=partitions, rate=rate, work_ms=work_ms,
        warmup_s=warmup, rollouts=rollouts, max_surge=max_surge,
        max_unavailable=max_unavailable,
    )  # fmt: skip
    conf = kafka_conf(ctx)
    cluster = describe_cluster(conf)
    directory = out or Path("out") / "lab" / time.strftime("%Y%m%d-%H%M%S")
    with progress(interactive() and not as_json) as show:
        runs = [ScenarioRun(conf, cluster, config, s, directory / s.name, show) for s in chosen]
        items: list[tuple[ScenarioReport, ScenarioData | None]] = [run.run() for run in runs]
    reports = [report for report, _ in items]
    best = improvement(reports)
    directory.mkdir(parents=True, exist_ok=True)
    page = directory / "report.html"
    page.write_text(render_page(cluster.name, items), encoding="utf-8")
    problems = verdict(reports)
    if as_json:
        doc: dict[str, Any] = {
            "broker": cluster.to_json(),
            "scenarios": [r.to_json() for r in reports],
            "best_improvement": (
                None if best.best is None else dict(zip(BEST_KEYS, best.best, strict=True))
            ),
            "report": str(page),
            "problems": problems,
        }
        print_json(doc)
    else:
        out_console.print(table(cluster.name, reports), width=max(out_console.width, TABLE_WIDTH))
        for line in notes(reports, best):
            out_console.print(line, soft_wrap=True)
        out_console.print(f"page: {page}", soft_wrap=True)
    if problems:
        raise LaglessError("; ".join(problems))


def verdict(reports: list[ScenarioReport]) -> list[str]:
    """What makes the run fail: lost records, a group not committed to its end."""
    problems: list[str] = []
    for r in reports:
        if r.measures is not None and r.measures.lost:
            problems.append(f"{r.scenario}: {r.measures.lost} records lost")
        if r.supported and r.committed_to_end is False:
            problems.append(f"{r.scenario}: the group did not commit the end of {r.topic}")
    return problems
