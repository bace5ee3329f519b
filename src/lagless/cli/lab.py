"""`lagless lab rebalance`: the rolling-update experiment, default settings against mitigations."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from lagless.cli import common
from lagless.cli.common import err_console, interactive, kafka_conf, out_console, print_json
from lagless.deploy.reader import read_rollout
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.cluster import describe_cluster
from lagless.lab.ablation import ablation_table
from lagless.lab.config import profile as lab_profile
from lagless.lab.measures import Improvements, improvement
from lagless.lab.model import ScenarioData, ScenarioReport
from lagless.lab.page import render_page
from lagless.lab.runner import ScenarioRun, ShowFn, Status
from lagless.lab.scenarios import DEFAULT_SCENARIOS, Scenario, parse_scenarios

app = typer.Typer(help="Experiments on a live cluster.", no_args_is_help=True)

BEST_KEYS = ("scenario", "figure", "ratio")
TABLE_WIDTH = 170  # the table is not wrapped into 80 columns when piped


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(broker: str, reports: list[ScenarioReport]) -> Table:
    """The article's table: scenarios as rows, the measures as columns."""
    out = Table(title=f"rebalance lab on {broker}", title_justify="left")
    for name in (
        "scenario", "rebalances", "rebalance s\navg / max", "max\nunconsumed s",
        "max position\nlag records", "max committed\nlag records", "max lag\ns",
        "e2e ms\navg / p50 / p99 / max", "e2e ms avg\nin rollouts", "lost", "dup", "overlaps",
    ):  # fmt: skip
        out.add_column(name, justify="left" if name == "scenario" else "right")
    for r in reports:
        m = r.measures
        name = r.scenario if r.failed is None else f"{r.scenario} (FAILED)"
        last = r.last
        if m is None or last is None:
            out.add_row(name, *["-"] * 11)
            continue
        e2e = last.e2e_ms
        out.add_row(
            name,
            str(m.rebalances),
            f"{_fmt(m.rebalance_s.avg)} / {_fmt(m.rebalance_s.max)}",
            _fmt(m.max_unconsumed_s),
            "-" if m.max_position_lag_records is None else str(m.max_position_lag_records),
            str(m.max_lag_records),
            _fmt(m.max_lag_s),
            f"{_fmt(e2e.avg, 0)} / {_fmt(e2e.p50, 0)} / {_fmt(e2e.p99, 0)} / {_fmt(e2e.max, 0)}",
            _fmt(last.e2e_rollout_ms.avg, 0),
            str(m.lost),
            str(m.duplicated),
            str(m.ownership_overlaps),
        )
    return out


def notes(reports: list[ScenarioReport], best: Improvements) -> list[str]:
    lines = [f"{r.scenario}: FAILED: {r.failed}" for r in reports if r.failed]
    lines += [f"{r.scenario}: {r.note}" for r in reports if r.note]
    lines += [f"{r.scenario}: {cpu_line(r.cpu)}" for r in reports if r.cpu]
    lines += [
        f"{r.scenario}: {s.spec['service']} ({s.spec['role']}): max position lag "
        f"{s.measures.max_position_lag_records}, max committed lag {s.measures.max_lag_records}, "
        f"lost {s.measures.lost}"
        for r in reports
        if len(r.services) > 1
        for s in r.services[1:]
        if s.measures is not None
    ]
    found = best_json(best)
    if found is not None:
        lines.append(
            f"best improvement vs {best.baseline}: {found['ratio']:.1f}x "
            f"({found['figure']}, {found['scenario']})"
        )
    return lines


def cpu_line(cpu: dict[str, Any]) -> str:
    return (
        f"CPU over the rollouts: the host busy {cpu['host_busy_cores']} of {cpu['cores']} cores "
        f"(the lab {cpu['lab_cores']}), headroom {cpu['headroom_cores']}"
    )


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """SIGTERM interrupts the lab like Ctrl-C: the running scenario stops its instances."""

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    profile: Annotated[
        str,
        typer.Option(
            help="default, or article: two services, 48/64 partitions, 3,600 records/s, "
            "4 rollouts (its values apply where no option is given)"
        ),
    ] = "default",
    article_time: Annotated[
        bool, typer.Option("--article-time", help="--profile article over the article's 30 min")
    ] = False,
    topology: Annotated[
        str | None, typer.Option(help="single (one service) or article (two; service #1 rolled)")
    ] = None,
    instances: Annotated[
        int | None, typer.Option(help="instances of the rolled service [3]")
    ] = None,
    partitions: Annotated[int | None, typer.Option(help="partitions of its topic [12]")] = None,
    rate: Annotated[float | None, typer.Option(help="records per second produced [1000]")] = None,
    work_ms: Annotated[int | None, typer.Option(help="ms of work per record [1]")] = None,
    instances2: Annotated[
        int | None, typer.Option(help="article topology: service #2's instances [4]")
    ] = None,
    partitions2: Annotated[
        int | None, typer.Option(help="article topology: topic #2's partitions [64]")
    ] = None,
    work2_ms: Annotated[
        float | None, typer.Option(help="article topology: service #2's ms of work [3.5]")
    ] = None,
    warmup: Annotated[float | None, typer.Option(help="seconds of steady state [15]")] = None,
    rollouts: Annotated[
        int | None, typer.Option(help="rollouts, each restarts every instance [1]")
    ] = None,
    window: Annotated[
        float | None, typer.Option(help="seconds the rollouts are spaced over (0: back to back)")
    ] = None,
    min_ready: Annotated[
        float | None,
        typer.Option(help="seconds a new instance must stay ready to count (minReadySeconds) [5]"),
    ] = None,
    max_surge: Annotated[
        int | None, typer.Option(help="override every scenario's maxSurge")
    ] = None,
    max_unavailable: Annotated[
        int | None, typer.Option(help="override every scenario's maxUnavailable")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="directory for the instances' records and report.html")
    ] = None,
    keep_topics: Annotated[
        bool, typer.Option(help="keep each scenario's topic (default: deleted once measured)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object at the end")] = (
        False
    ),
    deployment: Annotated[
        Path | None,
        typer.Option(help="a manifest from lagless deploy render: roll it (replicas, surge, ...)"),
    ] = None,
) -> None:
    """Roll a consumer service under load, per scenario; measure rebalances, lag, latency."""
    chosen = parse_scenarios(scenarios)
    knobs: dict[str, Any] = {
        "instances": instances, "min_ready_s": min_ready, "max_surge": max_surge,
        "max_unavailable": max_unavailable,
    }  # fmt: skip
    if deployment is not None:  # the manifest's rollout, as its one scenario
        chosen, taken = from_manifest(ctx, deployment, knobs)
        for line in taken:
            common.note(line)
    config = lab_profile(
        profile, article_time, topology=topology, partitions=partitions, rate=rate,
        work_ms=work_ms, instances2=instances2, partitions2=partitions2, work2_ms=work2_ms,
        warmup_s=warmup, rollouts=rollouts, window_s=window, keep_topics=keep_topics or None,
        **knobs,
    )  # fmt: skip
    directory = out or Path("out") / "lab" / time.strftime("%Y%m%d-%H%M%S")
    writable(directory)
    conf = kafka_conf(ctx)
    cluster = describe_cluster(conf)
    items: list[tuple[ScenarioReport, ScenarioData | None]] = []
    interrupted: str | None = None
    with progress(interactive() and not as_json) as show, interrupt_on_sigterm():
        runs = [ScenarioRun(conf, cluster, config, s, directory / s.name, show) for s in chosen]
        for run in runs:
            try:
                items.append(run.run())
            except KeyboardInterrupt:
                interrupted = run.scenario.name
                break
    reports = [report for report, _ in items]
    best = improvement([r for r in reports if r.failed is None])
    page = directory / "report.html"
    page.write_text(render_page(cluster.name, items), encoding="utf-8")
    problems = verdict(reports)
    if interrupted is not None:
        problems.append(f"interrupted during {interrupted}: the scenarios before it are shown")
    if as_json:
        doc: dict[str, Any] = {
            "broker": cluster.to_json(),
            "config": config.to_json(),
            "scenarios": [r.to_json() for r in reports],
            "best_improvement": best_json(best),
            "ablation": [row.to_json() for row in ablation_table(reports)],
            "report": str(page),
            "problems": problems,
        }
        print_json(doc)
    else:
        wide = Console(width=max(out_console.width, TABLE_WIDTH), soft_wrap=True)
        wide.print(table(cluster.name, reports))
        for line in notes(reports, best):
            out_console.print(line, soft_wrap=True, highlight=False, markup=False)
        out_console.print(f"page: {page}", soft_wrap=True, highlight=False, markup=False)
    if interrupted is not None:
        sys.stderr.write(f"lagless: interrupted during {interrupted}\n")
        raise typer.Exit(130)
    if problems:
        raise LaglessError("; ".join(problems))


def from_manifest(
    ctx: typer.Context, path: Path, knobs: dict[str, Any]
) -> tuple[tuple[Scenario, ...], list[str]]:
    """The scenario and knobs of a rendered manifest (``knobs`` updated); ConfigError if a
    flag the manifest sets was given too."""
    flags = ("scenarios", "instances", "min_ready", "max_surge", "max_unavailable")
    both = [f"--{f.replace('_', '-')}" for f in flags if common.given(ctx, f)]
    if both:
        raise ConfigError(f"--deployment sets {', '.join(both)}: give one or the other")
    rollout = read_rollout(path)
    knobs.update(rollout.lab_values())
    return (rollout.scenario(),), rollout.taken()


def writable(directory: Path) -> None:
    """Create ``directory`` (before anything starts); a one-line ConfigError if it cannot be."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".lagless-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"--out {directory}: cannot write there: {exc.strerror or exc}") from None


def best_json(best: Improvements) -> dict[str, Any] | None:
    found = best.best
    if found is None or found[2] <= 1.0:
        return None
    return dict(zip(BEST_KEYS, found, strict=True))


def verdict(reports: list[ScenarioReport]) -> list[str]:
    """What makes the run fail: a scenario that could not finish, lost records, a group not
    committed to the end of its topic, or nothing measured at all."""
    problems: list[str] = []
    for r in reports:
        if r.failed is not None:
            problems.append(f"{r.scenario} failed: {r.failed}")
            continue
        if r.measures is not None and r.measures.lost:
            problems.append(f"{r.scenario}: {r.measures.lost} records lost")
        if r.supported and r.committed_to_end is False:
            problems.append(f"{r.scenario}: the group did not commit the end of {r.topic}")
    if reports and not any(r.supported for r in reports):
        problems.append("no scenario could run on this broker")
    return problems
