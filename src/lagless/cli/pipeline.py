"""`lagless pipeline run`: the Spark pipeline (Kafka -> parse, validate, transform -> Parquet,
DLQ, aggregates) for the user's own records, or the demo's events (``--preset events``)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lagless import extras
from lagless.cli.common import (
    Stop,
    err_console,
    interactive,
    kafka_conf,
    note,
    out_console,
    print_json,
    signals_stop,
)
from lagless.errors import ConfigError, LaglessError
from lagless.observe.metrics import Metrics
from lagless.signals import ignored, stop_on_signals

if TYPE_CHECKING:
    from lagless.spark.pipeline import PipelineSummary

app = typer.Typer(help="The Spark pipeline: Kafka -> PySpark -> Parquet.", no_args_is_help=True)


def spark_log_level() -> str:
    """Spark's log level from lagless's verbosity (-v INFO, -vv DEBUG)."""
    level = logging.getLogger().getEffectiveLevel()
    return "DEBUG" if level <= logging.DEBUG else "INFO" if level <= logging.INFO else "WARN"


@app.command("run")
def run(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", "-t", help="input topic(s), comma-separated")],
    output: Annotated[
        str, typer.Option(help="Parquet output, a path or URI: OUT/TABLE, OUT/aggregates")
    ],
    checkpoint: Annotated[
        str, typer.Option(help="checkpoint location, a path or URI (source of truth)")
    ],
    value: Annotated[str, typer.Option(help="value format: json, avro, protobuf or raw")] = "json",
    schema: Annotated[
        str | None,
        typer.Option(help="json: a Spark DDL string, a JSON Schema file or module:Model"),
    ] = None,
    key: Annotated[str, typer.Option(help="key as column kafka_key: none, string, binary")] = (
        "none"
    ),
    registry: Annotated[
        str | None, typer.Option(help="avro, protobuf: Schema Registry URL")
    ] = None,
    subject: Annotated[
        str | None, typer.Option(help="avro, protobuf: registry subject (default TOPIC-value)")
    ] = None,
    message: Annotated[
        str | None, typer.Option(help="protobuf: the record message (default the first)")
    ] = None,
    check: Annotated[
        list[str] | None,
        typer.Option(help="NAME=SQL condition each record must meet, else DLQ (repeatable)"),
    ] = None,
    transform: Annotated[
        str | None, typer.Option(help="module:function, DataFrame -> DataFrame")
    ] = None,
    sql: Annotated[str | None, typer.Option(help='instead: "SELECT ... FROM input"')] = None,
    table: Annotated[str, typer.Option(help="output folder under OUT")] = "rows",
    partition_by: Annotated[
        list[str] | None, typer.Option(help="output partition column (repeatable)")
    ] = None,
    output_topic: Annotated[
        str | None, typer.Option(help="also write the rows (JSON) to this topic")
    ] = None,
    window_on: Annotated[
        str | None, typer.Option(help="aggregates: the time column of the windows")
    ] = None,
    window: Annotated[str, typer.Option(help="aggregates: window length")] = "1 minute",
    group_by: Annotated[
        list[str] | None, typer.Option(help="aggregates: group-by column (repeatable)")
    ] = None,
    agg: Annotated[
        list[str] | None,
        typer.Option(help="aggregates: NAME=count(*)|count(C)|sum(C)|min(C)|max(C) (repeatable)"),
    ] = None,
    preset: Annotated[
        str | None, typer.Option(help="events: the demo's order events (schema, checks, ...)")
    ] = None,
    group: Annotated[
        str | None, typer.Option(help="consumer group that mirrors the processed offsets")
    ] = None,
    master: Annotated[str, typer.Option(help="local[*], local[N] or spark://HOST:PORT")] = (
        "local[*]"
    ),
    trigger: Annotated[
        str,
        typer.Option(
            help="available-now, or processing-time=5s (until Ctrl-C / SIGTERM: the batch in "
            "progress finishes; a second signal stops at once)"
        ),
    ] = "available-now",
    max_offsets_per_trigger: Annotated[
        int | None, typer.Option(min=1, help="records per micro-batch (default: all)")
    ] = None,
    min_partitions: Annotated[
        int | None, typer.Option(min=1, help="split offset ranges into at least N tasks")
    ] = None,
    starting_offsets: Annotated[
        str, typer.Option(help="earliest or latest (a new checkpoint only)")
    ] = "earliest",
    dlq_topic: Annotated[
        str | None, typer.Option(help="dead-letter topic (default: TOPIC-dlq)")
    ] = None,
    source: Annotated[
        str, typer.Option(help="python (lagless-kafka) or jvm (Spark's kafka connector)")
    ] = "python",
    aggregates: Annotated[
        bool, typer.Option(help="write the windowed aggregates (--window-on or the preset's)")
    ] = True,
    watermark: Annotated[str, typer.Option(help="how late events may come")] = "1 minute",
    metrics_port: Annotated[
        int | None, typer.Option(min=1, max=65535, help="serve Prometheus metrics on PORT")
    ] = None,
    record: Annotated[
        Path | None, typer.Option(help="write the run timeline to DIR/timeline.jsonl")
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option("--conf", help="a Spark setting key=value (repeatable)"),
    ] = None,
    source_option: Annotated[
        list[str] | None,
        typer.Option(
            "--source-option",
            help="a source option key=value (e.g. fetchOffset.numRetries=5; repeatable)",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON summary")] = False,
) -> None:
    """Run the pipeline: valid records to Parquet (exactly once), invalid ones to the DLQ."""
    extras.require("spark", "lagless pipeline")
    from lagless.spark.connector.session import build_session, parse_conf
    from lagless.spark.pipeline import PipelineConfig, prepare_topics, run_pipeline
    from lagless.spark.pipeline.progress import BatchReport

    if starting_offsets not in {"earliest", "latest"}:
        raise ConfigError(f"--starting-offsets {starting_offsets!r} is not earliest or latest")
    if source not in {"python", "jvm"}:
        raise ConfigError(f"--source {source!r} is not python or jvm")
    shape: dict[str, Any] = {
        "value": value, "value_schema": schema, "key": key, "registry": registry,
        "subject": subject, "message": message, "checks": parse_checks(check or []),
        "transform": transform, "sql": sql, "table": table,
        "partition_by": tuple(partition_by or ()),
        "output_topic": output_topic,
        "windows": window_spec(window_on, window, watermark, group_by, agg, aggregates),
    }  # fmt: skip
    if preset is not None:
        shape = preset_shape(preset, shape, aggregates, watermark)
    values: dict[str, Any] = {
        **shape,
        "topic": topic,
        "output": output,
        "checkpoint": checkpoint,
        "group": group,
        "master": master,
        "trigger": trigger,
        "max_offsets_per_trigger": max_offsets_per_trigger,
        "min_partitions": min_partitions,
        "starting_offsets": starting_offsets,
        "dlq_topic": dlq_topic,
        "source": source,
        "spark_conf": parse_conf(conf or []),
        "source_options": parse_conf(source_option or [], "--source-option"),
        "kafka": {"bootstrap.servers": "unresolved:0"},
    }
    PipelineConfig.build(**values)  # bad input fails before connecting or starting Spark
    config = PipelineConfig.build(**{**values, "kafka": kafka_conf(ctx)})
    prepare_topics(config)  # a missing topic fails before Spark starts
    metrics = Metrics(group=config.group)
    if metrics_port is not None:
        try:
            metrics.serve(metrics_port)
        except OSError as exc:
            raise LaglessError(f"cannot serve metrics on port {metrics_port}: {exc}") from None
    show = interactive() and not json_out

    def on_batch(report: BatchReport) -> None:
        if show:
            err_console.print(report.line(), highlight=False)

    stop, stop_now = Stop(), threading.Event()
    sigint_ignored = ignored(signal.SIGINT)
    # while Spark starts, a signal is a stop for after it has (interrupted there, its JVM would
    # be left running)
    with signals_stop(stop), contextlib.ExitStack() as stack:
        if record is not None:
            from lagless.observe.timeline import Recorder

            settings = {
                "run": "lagless pipeline run", "topic": config.topic,
                "group": config.group or "-", "trigger": config.trigger,
                "max_offsets_per_trigger": config.max_offsets_per_trigger or "-",
                "dlq_topic": config.dlq_topic or "-", "master": config.master,
            }  # fmt: skip
            stack.enter_context(Recorder(metrics, record, interval=1.0, settings=settings))
        spark = build_session(
            config.master,
            app_name=f"lagless-pipeline-{topic}",
            conf=config.spark_conf,
            log_level=spark_log_level(),
        )
        if sigint_ignored:  # PySpark sets a SIGINT handler of its own over the ignore
            signal.signal(signal.SIGINT, signal.SIG_IGN)

        def hurry() -> None:
            if stop_now.is_set():  # a third signal: whatever hangs (a start) is cut
                raise KeyboardInterrupt
            stop_now.set()

        # after the session (PySpark sets a SIGINT handler of its own), and until it has
        # stopped: a signal then is ours, not PySpark's (which cancels jobs through py4j)
        with stop_on_signals(stop.is_set, stop.set, hurry):
            try:
                summary = run_pipeline(
                    config,
                    spark=spark,
                    metrics=metrics,
                    on_batch=on_batch,
                    stop=stop,
                    stop_now=stop_now,
                )
            finally:
                spark.stop()
    if json_out:
        print_json(summary.to_json())
    else:
        print_summary(summary)
    if stop_now.is_set():
        note("stopped at once: the micro-batch in progress runs again at the next start")
        raise typer.Exit(130)


def print_summary(summary: PipelineSummary) -> None:
    out_console.print(
        f"{summary.input_rows:,} records in {summary.batches} batches, "
        f"{summary.seconds:.1f} s ({summary.records_per_s:,.0f} records/s): "
        f"{summary.valid_rows:,} valid, {summary.dlq_rows:,} to DLQ topic {summary.dlq_topic}",
        highlight=False,
        soft_wrap=True,
    )
    lines = [f"output:     {summary.table_path}"]
    if summary.aggregates_path is not None:
        lines.append(f"aggregates: {summary.aggregates_path}")
    if summary.group is not None:
        lines.append(f"offsets committed to group {summary.group}")
    for line in lines:
        out_console.print(line, highlight=False, soft_wrap=True)


def parse_checks(texts: list[str]) -> tuple[Any, ...]:
    from lagless.spark.pipeline.parse import Check

    checks = []
    for text in texts:
        name, sep, condition = text.partition("=")
        if not sep or not name.strip().isidentifier() or not condition.strip():
            raise ConfigError(f"--check {text!r} is not NAME=SQL condition")
        checks.append(Check(name.strip(), condition.strip()))
    return tuple(checks)


def window_spec(
    time_column: str | None,
    window: str,
    watermark: str,
    group_by: list[str] | None,
    aggs: list[str] | None,
    enabled: bool,
) -> Any:
    from lagless.spark.pipeline.windows import Aggregation, WindowSpec, check_duration

    check_duration(watermark, "--watermark")
    if time_column is None:
        if group_by or aggs:
            raise ConfigError("--group-by and --agg need --window-on TIME_COLUMN")
        return None
    if not enabled:
        return None
    parsed = tuple(Aggregation.parse(a) for a in aggs or ["rows=count(*)"])
    return WindowSpec(time_column, window, watermark, tuple(group_by or ()), parsed)


def preset_shape(name: str, given: dict[str, Any], aggregates: bool, watermark: str) -> Any:
    """A preset's settings; giving any of them too is an error (which would win is unclear)."""
    if name != "events":
        raise ConfigError(f"--preset {name!r} is not events")
    from lagless.spark.examples.events import preset

    defaults = {"value": "json", "key": "none", "table": "rows", "partition_by": (), "checks": ()}
    clash = [k for k, v in given.items() if v is not None and v != defaults.get(k)]
    if clash:
        flags = ", ".join(
            "--" + k.replace("value_schema", "schema").replace("_", "-") for k in clash
        )
        raise ConfigError(f"--preset {name} sets the record shape itself: leave out {flags}")
    return preset(aggregates, watermark)
