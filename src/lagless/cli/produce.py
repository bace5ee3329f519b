"""`lagless produce`: the producer and load generator."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import Progress

from lagless.cli.common import interactive, kafka_conf, out_console, print_json
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
) -> None:
    """Produce a jobs or events workload and report what was delivered."""
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
    if interactive() and not as_json:
        with Progress(console=out_console, transient=True) as bar:
            task = bar.add_task(f"producing to {topic}", total=total)
            result = run_load(
                conf,
                topic,
                records,
                count=count,
                rate=rate,
                duration=duration,
                profile=profile,
                on_progress=lambda n: bar.update(task, completed=n),
            )
    else:
        result = run_load(
            conf, topic, records, count=count, rate=rate, duration=duration, profile=profile
        )
    if as_json:
        print_json(result.to_json())
    else:
        out_console.print(
            f"produced {result.produced} records ({result.failed} failed) in {result.seconds} s: "
            f"{result.records_per_s:.0f} records/s, {result.mb_per_s:.2f} MB/s [{result.profile}]"
        )
        if result.first_error:
            out_console.print(f"first failure: {result.first_error}")
    if result.failed:
        raise typer.Exit(1)
