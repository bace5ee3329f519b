"""`lagless produce`: the producer and load generator, or the user's own records (--from)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from lagless.cli.common import (
    ctrl_c_sets,
    given,
    interactive,
    kafka_conf,
    note,
    out_console,
    print_json,
)
from lagless.errors import ConfigError
from lagless.produce.lines import LineFormat, LinesResult, produce_lines, read_aside
from lagless.produce.producer import ProduceResult, check_load_args, run_load
from lagless.produce.profiles import Profile
from lagless.produce.workloads import Workload, WorkloadSpec, generate, parse_sleep_range


def produce(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option(help="topic to produce to")],
    workload: Annotated[Workload, typer.Option(help="jobs or events")] = Workload.JOBS,
    count: Annotated[
        int | None, typer.Option(help="records to produce, as fast as possible")
    ] = None,
    rate: Annotated[float | None, typer.Option(help="records per second (with --duration)")] = None,
    duration: Annotated[float | None, typer.Option(help="seconds to produce at --rate")] = None,
    profile: Annotated[
        Profile, typer.Option(help="producer settings profile")
    ] = Profile.THROUGHPUT,
    keys: Annotated[int, typer.Option(help="distinct keys (0: jobs unkeyed)")] = 0,
    bad_fraction: Annotated[float, typer.Option(help="share of malformed records")] = 0.0,
    sleep_ms: Annotated[str, typer.Option(help="jobs: MIN:MAX sleep in ms")] = "1000:3000",
    payload_bytes: Annotated[int, typer.Option(help="extra padding per record")] = 0,
    seed: Annotated[int | None, typer.Option(help="random seed")] = None,
    id_prefix: Annotated[str, typer.Option(help="prefix of record ids")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    source: Annotated[
        str | None,
        typer.Option("--from", help="your records: a file of JSON or key<TAB>value lines, - stdin"),
    ] = None,
    lines: Annotated[
        LineFormat, typer.Option(help="--from: json, tab, or auto (JSON if the first is {...})")
    ] = LineFormat.AUTO,
) -> None:
    """Produce a jobs or events workload, or your own records (--from), and report what was
    delivered."""
    if source is not None:
        produce_from(ctx, topic, source, lines, profile, as_json)
        return
    if given(ctx, "lines"):
        raise ConfigError("--lines applies to --from only")
    check_load_args(count, rate, duration)
    spec = WorkloadSpec(
        workload=workload,
        keys=keys,
        bad_fraction=bad_fraction,
        sleep_ms=parse_sleep_range(sleep_ms),
        seed=seed,
        id_prefix=id_prefix,
        payload_bytes=payload_bytes,
    )
    conf = kafka_conf(ctx)
    total = count if count is not None else int((rate or 0) * (duration or 0))
    records = generate(spec)
    result: ProduceResult
    with ctrl_c_sets(threading.Event()) as stop:
        if interactive() and not as_json:
            with Progress(console=out_console, transient=True) as bar:
                task = bar.add_task(f"producing to {topic}", total=total)
                result = run_load(
                    conf, topic, records, count=count, rate=rate, duration=duration,
                    profile=profile, on_progress=lambda n: bar.update(task, completed=n),
                    stop=stop,
                )  # fmt: skip
        else:
            result = run_load(
                conf, topic, records, count=count, rate=rate, duration=duration,
                profile=profile, stop=stop,
            )  # fmt: skip
    if as_json:
        print_json(result.to_json())
    else:
        out_console.print(
            f"produced {result.produced} records ({result.failed} failed) in {result.seconds} s: "
            f"{result.records_per_s:.0f} records/s, {result.mb_per_s:.2f} MB/s [{result.profile}]"
        )
        if result.first_error:
            out_console.print(f"first failure: {result.first_error}")
    exit_for(result)


WORKLOAD_OPTIONS = (
    "workload", "count", "rate", "duration", "keys", "bad_fraction", "sleep_ms",
    "payload_bytes", "seed", "id_prefix",
)  # fmt: skip


def produce_from(
    ctx: typer.Context, topic: str, source: str, fmt: LineFormat, profile: Profile, as_json: bool
) -> None:
    """Send the lines of ``source`` (a file, or - for stdin); count at the end, exit 1 on any
    failed delivery, 2 on a line that is not a record, 130 on Ctrl-C."""
    workload = ["--" + name.replace("_", "-") for name in WORKLOAD_OPTIONS if given(ctx, name)]
    if workload:
        raise ConfigError(f"{', '.join(workload)}: workload options, not allowed with --from")
    if source != "-" and not Path(source).is_file():
        raise ConfigError(f"--from {source}: no such file")
    conf = kafka_conf(ctx)
    with ctrl_c_sets(threading.Event()) as stop:
        if source == "-":
            lines = read_aside(sys.stdin, stop)
            done = produce_lines(conf, topic, lines, fmt, profile, stop=stop)
        else:
            with Path(source).open(encoding="utf-8", newline="\n") as handle:
                done = produce_lines(conf, topic, handle, fmt, profile, stop=stop)
    report_lines(done, topic, as_json)


def report_lines(done: LinesResult, topic: str, as_json: bool) -> None:
    result = done.result
    if as_json:
        print_json({**result.to_json(), "lines": done.lines, "stopped": done.stopped})
    else:
        out_console.print(
            f"produced {result.produced} records to {topic} ({result.failed} failed) "
            f"from {done.lines} lines in {result.seconds} s"
        )
    if result.first_error:
        note(f"first failure: {result.first_error}")
    if done.stopped:
        note(f"stopped at {done.stopped}; nothing after it was sent")
        raise typer.Exit(2)
    exit_for(result)


def exit_for(result: ProduceResult) -> None:
    """Exit 130 after Ctrl-C (the count is printed), 1 when a delivery failed."""
    if result.interrupted:
        note("interrupted: what was sent before is flushed and counted above")
        raise typer.Exit(130)
    if result.failed:
        raise typer.Exit(1)
