"""`lagless produce`: the producer and load generator, or the user's own records (--from)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress

from lagless.cli.common import (
    Stop,
    given,
    interactive,
    kafka_conf,
    note,
    one_name,
    out_console,
    print_json,
    signals_stop,
)
from lagless.errors import ConfigError
from lagless.kafka.admin import list_topics
from lagless.kafka.cluster import describe_cluster
from lagless.kafka.compat import create_topic
from lagless.produce.lines import LineFormat, LinesResult, produce_lines, read_aside
from lagless.produce.producer import ProduceResult, check_load_args, run_load
from lagless.produce.profiles import Profile
from lagless.produce.workloads import Workload, WorkloadSpec, generate, parse_sleep_range


def produce(
    ctx: typer.Context,
    topic_arg: Annotated[str | None, typer.Argument(metavar="TOPIC", help="the topic")] = None,
    topic_opt: Annotated[str | None, typer.Option("--topic", help="the topic (alias)")] = None,
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
        LineFormat,
        typer.Option(
            help="--from: json (records as tail --json writes), tab (key<TAB>value), value "
            "(each line a value), or auto (from the first line)"
        ),
    ] = LineFormat.AUTO,
    key_delimiter: Annotated[
        str | None,
        typer.Option(
            "--key-delimiter", "-K", help="KEY<DELIM>VALUE lines, as kcat -K (stdin by default)"
        ),
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="create the topic if it does not exist")
    ] = False,
    partitions: Annotated[
        int, typer.Option(min=1, help="--create: partitions of the new topic")
    ] = 1,
) -> None:
    """Produce a jobs or events workload, or your own records (--from), and report what was
    delivered."""
    topic = one_name("topic", topic_arg, topic_opt)
    if key_delimiter is not None:
        if not key_delimiter:
            raise ConfigError("-K: give the delimiter between key and value, e.g. -K:")
        if given(ctx, "lines") and lines is not LineFormat.TAB:
            raise ConfigError("-K reads KEY<DELIM>VALUE lines: not with --lines " + lines.value)
        source, lines = source or "-", LineFormat.TAB
    if source is not None:
        conf = kafka_conf(ctx)
        has = ensure_topic(conf, topic, create, partitions)
        produce_from(ctx, conf, topic, source, lines, profile, as_json, key_delimiter or "\t", has)
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
    ensure_topic(conf, topic, create, partitions)
    total = count if count is not None else int((rate or 0) * (duration or 0))
    records = generate(spec)
    result: ProduceResult
    with signals_stop(Stop()) as stop:
        if interactive() and not as_json:
            with Progress(console=out_console, transient=True) as bar:
                task = bar.add_task(f"producing to {topic}", total=total)
                result = run_load(
                    conf, topic, records, count=count, rate=rate, duration=duration,
                    profile=profile, on_progress=lambda n: bar.update(task, completed=n),
                    stop=stop, hurry=stop.hurried,
                )  # fmt: skip
        else:
            result = run_load(
                conf, topic, records, count=count, rate=rate, duration=duration,
                profile=profile, stop=stop, hurry=stop.hurried,
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
    exit_for(result, stop)


WORKLOAD_OPTIONS = (
    "workload", "count", "rate", "duration", "keys", "bad_fraction", "sleep_ms",
    "payload_bytes", "seed", "id_prefix",
)  # fmt: skip


def ensure_topic(conf: dict[str, Any], topic: str, create: bool, partitions: int) -> int | None:
    """Produce only to a topic that exists (a typo would create a new one on a cluster that
    auto-creates): ``--create`` makes it; a cluster known to create on produce is said.
    Returns the topic's partition count (None: the cluster creates it on the first record)."""
    existing = dict(list_topics(conf, internal=True))
    if topic in existing:
        return existing[topic]
    if create:
        create_topic(conf, topic, partitions, exist_ok=True)
        note(f"topic {topic} created with {partitions} partitions")
        return dict(list_topics(conf, internal=True)).get(topic, partitions)
    cluster = describe_cluster(conf)
    if cluster.is_mock:
        note(f"topic {topic} does not exist: {cluster.product} creates it on the first record")
        return None
    raise ConfigError(
        f"topic {topic!r} does not exist: add --create (with --partitions N) or run "
        f"lagless topic create {topic}"
    )


def produce_from(
    ctx: typer.Context,
    conf: dict[str, Any],
    topic: str,
    source: str,
    fmt: LineFormat,
    profile: Profile,
    as_json: bool,
    delimiter: str,
    partitions: int | None = None,
) -> None:
    """Send the lines of ``source`` (a file, or - for stdin); count at the end, exit 1 on any
    failed delivery or a record naming a partition the topic (of ``partitions``) does not
    have, 2 on a line that is not a record, 130 on Ctrl-C."""
    workload = ["--" + name.replace("_", "-") for name in WORKLOAD_OPTIONS if given(ctx, name)]
    if workload:
        raise ConfigError(f"{', '.join(workload)}: workload options, not allowed with --from")
    if source != "-" and Path(source).is_dir():
        raise ConfigError(f"--from {source}: is a directory")
    if source != "-" and not Path(source).exists():  # a pipe or a device reads like a file
        raise ConfigError(f"--from {source}: no such file")
    with signals_stop(Stop()) as stop:
        if source == "-":  # bytes that are not UTF-8 reach the record as they were
            lines = read_aside(sys.stdin.fileno(), stop)
            done = produce_lines(
                conf, topic, lines, fmt, profile, stop=stop, hurry=stop.hurried,
                delimiter=delimiter, partitions=partitions,
            )  # fmt: skip
        else:
            with Path(source).open(encoding="utf-8", errors="surrogateescape", newline="\n") as f:
                done = produce_lines(
                    conf, topic, f, fmt, profile, stop=stop, hurry=stop.hurried,
                    delimiter=delimiter, partitions=partitions,
                )  # fmt: skip
    report_lines(done, topic, as_json, stop)


def report_lines(done: LinesResult, topic: str, as_json: bool, stop: Stop) -> None:
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
        raise typer.Exit(done.exit_code)
    exit_for(result, stop)


def exit_for(result: ProduceResult, stop: Stop) -> None:
    """Exit 130 after Ctrl-C, 143 after SIGTERM (the count is printed), 1 when a delivery
    failed."""
    if result.interrupted:
        note(f"{stop.reason}: what was sent before is flushed and counted above")
        raise typer.Exit(stop.exit_code)
    if result.failed:
        raise typer.Exit(1)
