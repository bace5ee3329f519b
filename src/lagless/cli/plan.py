"""`lagless plan`: measure one partition, recommend partitions and client settings."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from lagless.cli.common import given, kafka_conf, note, out_console, print_json
from lagless.errors import ClusterError, ConfigError
from lagless.kafka.offsets import OffsetProbe
from lagless.plan.sizing import Plan, PlanInput, make_plan
from lagless.produce.profiles import Profile
from lagless.produce.workloads import Workload, parse_sleep_range


def current_partitions(conf: dict[str, object], topic: str) -> int | None:
    """The topic's partition count now; None if it does not exist."""
    with OffsetProbe(conf) as probe:
        try:
            return len(probe.partitions(topic))
        except ClusterError:
            return None


def plan(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option(help="the topic to plan (it may not exist yet)")],
    target_rate: Annotated[float, typer.Option(help="records/s the topic must carry")],
    record_bytes: Annotated[int, typer.Option(help="typical record value size")] = 1000,
    handler: Annotated[str, typer.Option(help="engine handler: noop, sleep, module:function")] = (
        "noop"
    ),
    profile: Annotated[Profile, typer.Option(help="producer profile")] = Profile.THROUGHPUT,
    headroom: Annotated[float, typer.Option(help="multiplier over the bare need")] = 1.2,
    workload: Annotated[
        Workload | None, typer.Option(help="records to measure with (default: jobs for sleep)")
    ] = None,
    sleep_ms: Annotated[str, typer.Option(help="jobs: MIN:MAX handler sleep in ms")] = "1:5",
    ordering: Annotated[str, typer.Option(help="engine ordering: partition, key, unordered")] = (
        "partition"
    ),
    max_in_flight: Annotated[int, typer.Option(help="engine records in flight")] = 64,
    measure_records: Annotated[int, typer.Option(help="records per measurement")] = 50_000,
    measure_seconds: Annotated[float, typer.Option(help="most seconds to consume")] = 15.0,
    replication: Annotated[
        int, typer.Option(help="replication factor (scratch topic and costs)")
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Measure one partition's produce and consume rates; size the topic for --target-rate."""
    if target_rate <= 0:
        raise ConfigError("--target-rate must be positive")
    if headroom < 1:
        raise ConfigError("--headroom must be at least 1")
    if record_bytes < 1:
        raise ConfigError("--record-bytes must be at least 1")
    if measure_seconds <= 0:
        raise ConfigError("--measure-seconds must be positive")
    sleeps = parse_sleep_range(sleep_ms)
    chosen = workload or (Workload.JOBS if handler == "sleep" else Workload.EVENTS)
    if given(ctx, "sleep_ms") and chosen is not Workload.JOBS:
        raise ConfigError(
            f"--sleep-ms sets the jobs workload's sleep, but the records measured are "
            f"{chosen.value}: add --workload jobs (with --handler sleep) or drop --sleep-ms"
        )
    conf = kafka_conf(ctx)
    # the engine is imported only when measuring: the rest of the CLI does not depend on it
    from lagless.engine.handlers import load_handler
    from lagless.plan.measure import ConsumeOptions, measure

    run = load_handler(handler)
    why = "--workload" if workload else f"the default for --handler {handler}"
    note(f"measuring with {measure_records:,} {chosen.value} records ({why})")
    existing = current_partitions(conf, topic)
    measured = measure(
        conf,
        run,
        workload=chosen,
        record_bytes=record_bytes,
        count=measure_records,
        profile=profile,
        sleep_ms=sleeps,
        consume=ConsumeOptions(ordering, max_in_flight, measure_seconds),
        replication=replication,
    )
    result = make_plan(
        PlanInput(
            target_rate=target_rate,
            t_produce=measured.produce.records_per_s,
            t_consume=measured.consume.records_per_s,
            record_bytes=measured.record_bytes,
            headroom=headroom,
            profile=profile,
            handler_seconds=measured.consume.handler_seconds,
            replication=replication,
        )
    )
    if as_json:
        doc = result.to_json()
        doc.update(
            topic=topic,
            current_partitions=existing,
            measured={
                "produce": measured.produce.to_json(),
                "consume": {
                    "processed": measured.consume.processed,
                    "failed": measured.consume.failed,
                    "seconds": measured.consume.seconds,
                    "records_per_s": measured.consume.records_per_s,
                    "method": measured.consume.method,
                    "handler": handler,
                },
            },
        )
        print_json(doc)
        return
    show(result, topic, existing, handler)


def plural(partitions: int) -> str:
    return f"{partitions} partition{'s' if partitions != 1 else ''}"


def show(result: Plan, topic: str, existing: int | None, handler: str) -> None:
    i = result.inputs
    out_console.print(
        f"one partition: produce {i.t_produce:,.0f} records/s ({i.profile.value} profile, "
        f"~{i.record_bytes} B records), consume {i.t_consume:,.0f} records/s (handler {handler})"
    )
    out_console.print(
        f"[bold]{topic}: {plural(result.partitions)}[/] for {i.target_rate:,.0f} records/s "
        f"= ceil(max({i.target_rate:,.0f}/{i.t_produce:,.0f}, {i.target_rate:,.0f}/"
        f"{i.t_consume:,.0f}) x {i.headroom}); bound by {result.bound_by}"
    )
    if existing is None:
        out_console.print(f"{topic} does not exist yet: create it with {plural(result.partitions)}")
    elif existing < result.partitions:
        out_console.print(
            f"{topic} has {existing}: add {result.partitions - existing} (keys will move)"
        )
    else:
        out_console.print(f"{topic} has {existing}: enough")
    for client, group in result.settings.items():
        table = Table(title=f"{client} settings", title_justify="left")
        table.add_column("setting")
        table.add_column("value", justify="right")
        table.add_column("why")
        for name, setting in group.items():
            table.add_row(name, str(setting.value), setting.reason)
        out_console.print(table)
    costs = Table(title=f"what {plural(result.partitions)} cost", title_justify="left")
    costs.add_column("cost")
    costs.add_column("amount", justify="right")
    costs.add_column("why")
    for cost in result.costs:
        costs.add_row(cost.name, cost.value, cost.reason)
    out_console.print(costs)
