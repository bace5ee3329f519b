"""`lagless demo`: the whole system on the embedded broker, end to end.

1. topics and load: a jobs workload (slow per-record work) and an events workload (with a few
   malformed records);
2. the consumer engine on the jobs, beside a sequential loop over the same jobs;
3. the Spark pipeline on the events: Parquet out, malformed records to the dead-letter topic;
4. the lag of both groups, and an HTML report of the engine run.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from lagless import extras
from lagless.cli.common import kafka_conf, options, out_console
from lagless.cli.consume import run_settings
from lagless.cli.lag import lag_lines, total_line
from lagless.engine import EngineConfig, load_handler, run_engine
from lagless.engine.record import Record
from lagless.errors import ConfigError
from lagless.ids import ID_HEADER, MALFORMED_HEADER
from lagless.kafka.admin import create_topic
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.observe.lag import measure_lag
from lagless.observe.metrics import Metrics
from lagless.observe.report import write_report
from lagless.observe.timeline import Recorder
from lagless.produce.producer import run_load
from lagless.produce.workloads import Workload, WorkloadSpec, generate

PARTITIONS = 6


def produce_section(conf: dict[str, Any], run: str, jobs: int, events: int) -> tuple[str, str]:
    jobs_topic, events_topic = f"demo-jobs-{run}", f"demo-events-{run}"
    for name in (jobs_topic, events_topic):
        create_topic(conf, name, partitions=PARTITIONS, exist_ok=True)
    jobs_spec = WorkloadSpec(Workload.JOBS, keys=32, sleep_ms=(10, 30), seed=1, id_prefix="job-")
    ev_spec = WorkloadSpec(Workload.EVENTS, bad_fraction=0.02, seed=2, id_prefix="ord-")
    for name, spec, count in ((jobs_topic, jobs_spec, jobs), (events_topic, ev_spec, events)):
        result = run_load(conf, name, generate(spec), count=count)
        ids: Counter[bytes] = Counter()
        malformed = 0
        for msg in read_all(conf, name):
            ids[header(msg, ID_HEADER) or b""] += 1
            malformed += header(msg, MALFORMED_HEADER) is not None
        out_console.print(
            f"produced {result.produced} records to {name} ({result.failed} failed, "
            f"{result.records_per_s:.0f} records/s); read back {sum(ids.values())}, "
            f"{len(ids)} distinct ids, {malformed} malformed"
        )
    return jobs_topic, events_topic


def engine_section(conf: dict[str, Any], topic: str, jobs: int, out_dir: Path) -> str:
    handler = load_handler("sleep")
    out_console.print(f"sequential: one thread handles the {jobs} jobs in turn ...")
    started = time.monotonic()
    for msg in read_all(conf, topic):
        handler(Record.from_message(msg))
    sequential = time.monotonic() - started
    group = f"{topic}-engine"
    config = EngineConfig.build(
        topics=(topic,), group=group, ordering="key", max_in_flight=200, count=jobs,
        session_timeout_ms=6000, heartbeat_interval_ms=1500, on_failure="skip",
    )  # fmt: skip
    out_console.print("engine: key ordering, 200 in flight ...")
    metrics = Metrics(group=group)
    with Recorder(metrics, out_dir / "engine-run", settings=run_settings(config, "sleep")):
        summary = run_engine(conf, config, handler, metrics=metrics)
    speedup = sequential / summary.seconds if summary.seconds else 0.0
    out_console.print(
        f"sequential {sequential:.1f} s; engine {summary.seconds:.1f} s of processing (first "
        f"record received to last finished): {speedup:.1f}x faster; group join "
        f"{summary.join_s} s, {summary.wall_s:.1f} s in all; processed {summary.processed}, "
        f"commits {summary.commits}, pauses {summary.pauses}; e2e p50 {summary.e2e_ms.p50} ms, "
        f"p99 {summary.e2e_ms.p99} ms (the jobs waited in the topic during the sequential pass)",
        soft_wrap=True,
    )
    return group


def pipeline_section(conf: dict[str, Any], topic: str, out_dir: Path) -> str:
    from lagless.spark.examples.events import events_config
    from lagless.spark.pipeline import run_pipeline

    group = f"{topic}-pipeline"
    config = events_config(
        topic=topic, output=out_dir / "lake", checkpoint=out_dir / "checkpoint", kafka=conf,
        group=group, master="local[2]", trigger="available-now",
    )  # fmt: skip
    out_console.print("spark: events -> Parquet (starting a local SparkSession) ...")
    summary = run_pipeline(config)
    out_console.print(
        f"pipeline: {summary.batches} batches, {summary.input_rows} rows in, "
        f"{summary.valid_rows} valid to Parquet at {summary.table_path}, "
        f"{summary.dlq_rows} malformed to topic {summary.dlq_topic}; "
        f"aggregates at {summary.aggregates_path}"
    )
    return group


def demo(
    ctx: typer.Context,
    jobs: Annotated[int, typer.Option(min=1, help="jobs to produce (10-30 ms each)")] = 600,
    events: Annotated[int, typer.Option(min=1, help="events to produce")] = 5000,
    out: Annotated[Path, typer.Option(help="where Parquet, checkpoints and the report go")] = Path(
        "out/demo"
    ),
    spark: Annotated[bool, typer.Option(help="run the Spark pipeline step")] = True,
    port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help="port of the embedded broker (default 9092) when no -b is given"
        ),
    ] = None,
) -> None:
    """Run the demo: broker, load, consumer engine, Spark pipeline, lag and report."""
    if port is not None and options(ctx).bootstrap is not None:
        raise ConfigError("--port is for the embedded broker: give either -b or --port")
    if spark:
        extras.require("spark", "lagless demo's Spark step (--no-spark skips it)")
    conf = kafka_conf(ctx, port=port)
    run = time.strftime("%Y%m%d-%H%M%S")
    out_dir = out / run
    out_console.rule("lagless demo")
    out_console.print(f"cluster: {conf['bootstrap.servers']}; output: {out_dir}")
    out_console.rule("1. load")
    jobs_topic, events_topic = produce_section(conf, run, jobs, events)
    out_console.rule("2. consumer engine")
    groups = [(engine_section(conf, jobs_topic, jobs, out_dir), jobs_topic)]
    if spark:
        out_console.rule("3. spark pipeline")
        groups.append((pipeline_section(conf, events_topic, out_dir), events_topic))
    out_console.rule("4. lag and report")
    for group, topic in groups:
        rows = measure_lag(conf, group, topic)
        out_console.print(total_line(group, rows))
        out_console.print("\n".join(lag_lines(rows)), highlight=False)
    report = write_report(out_dir / "engine-run")
    out_console.print(f"report of the engine run: {report}")
    out_console.print(f"see it live: lagless -b {conf['bootstrap.servers']} ui", highlight=False)
    out_console.rule("done")
