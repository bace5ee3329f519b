"""`lagless consume`: run the consumer engine on topics with a handler."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from lagless.broker.embedded import default_state_dir
from lagless.cli.common import interactive, options
from lagless.cli.common import settings as kafka_settings
from lagless.cli.consume_run import progress_line, run_and_report
from lagless.engine import (
    Engine,
    EngineConfig,
    EventLog,
    Ledger,
    OnFailure,
    Ordering,
    load_handler,
)
from lagless.engine.events import EVENTS_FILE
from lagless.engine.memory import tune_gc
from lagless.errors import ConfigError
from lagless.kafka.admin import check_reachable
from lagless.observe.instance import Publisher, StatusBoard, metrics_url
from lagless.observe.metrics import Metrics

# EngineConfig's fields as this command's flags (EngineConfig validates; errors name the flags)
FLAGS = {
    field: f"--{param.replace('_', '-')}"
    for field, param in {
        "topics": "topic", "group": "group", "ordering": "ordering",
        "max_in_flight": "max_in_flight", "max_pending": "max_pending",
        "processes": "processes", "batch_size": "batch_size",
        "batch_linger_ms": "batch_linger_ms", "inline": "no_inline", "retries": "retries",
        "retry_backoff_s": "retry_backoff", "retry_backoff_max_s": "retry_backoff",
        "dlq_topic": "dlq_topic", "on_failure": "on_failure", "count": "count",
        "until_idle_s": "until_idle", "commit_interval_s": "commit_interval",
        "commit_every": "commit_every", "assignor": "assignor", "static_id": "static_id",
        "group_protocol": "group_protocol", "remote_assignor": "remote_assignor",
        "leave_group_on_close": "no_leave_group", "client_id": "client_id",
        "session_timeout_ms": "session_timeout_ms", "heartbeat_interval_ms": "heartbeat_ms",
        "max_poll_interval_ms": "max_poll_interval_ms", "auto_offset_reset": "offset_reset",
        "revoke_budget_s": "revoke_budget", "shutdown_budget_s": "shutdown_budget",
        "stall_seconds": "stall_seconds",
    }.items()
}  # fmt: skip


def run_settings(config: EngineConfig, handler: str) -> dict[str, object]:
    """What the run report shows of an engine run's settings."""
    return {
        "run": "lagless consume",
        "topic": ",".join(config.topics),
        "group": config.group,
        "handler": handler,
        "ordering": config.ordering.value,
        "max_in_flight": config.max_in_flight,
        "processes": config.processes,
        "dlq_topic": config.dlq_topic or "-",
        "on_failure": config.on_failure.value if config.on_failure else "-",
    }


@contextlib.contextmanager
def recording(
    metrics: Metrics, directory: Path | None, settings: dict[str, object]
) -> Iterator[None]:
    """Sample the metrics into DIRECTORY/timeline.jsonl while the run lasts (the settings go
    to DIRECTORY/run.json)."""
    if directory is None:
        yield
        return
    from lagless.observe.timeline import Recorder

    with Recorder(metrics, directory, settings=settings):
        yield


def consume(
    ctx: typer.Context,
    topics_arg: Annotated[
        list[str] | None, typer.Argument(metavar="TOPIC...", help="topics to consume")
    ] = None,
    topic_opt: Annotated[
        list[str] | None, typer.Option("--topic", help="a topic to consume (alias, repeat)")
    ] = None,
    group: Annotated[str | None, typer.Option(help="consumer group id")] = None,
    handler: Annotated[
        str,
        typer.Option(
            help="sleep, noop or module:function (called with each Record, or with a "
            "list of Records with --batch-size)"
        ),
    ] = "sleep",
    ordering: Annotated[
        Ordering, typer.Option(help="keep order per partition, per key, or not at all")
    ] = Ordering.PARTITION,
    max_in_flight: Annotated[int, typer.Option(help="records handled at once")] = 64,
    max_pending: Annotated[
        int, typer.Option(help="per partition: records held before it is paused")
    ] = 1000,
    processes: Annotated[
        int, typer.Option(help="run the handler in N processes (CPU-bound work); 0: threads")
    ] = 0,
    batch_size: Annotated[
        int | None,
        typer.Option(help="call the handler with batches of up to N records (a batch handler)"),
    ] = None,
    batch_linger_ms: Annotated[
        float | None, typer.Option(help="with --batch-size: wait up to MS to fill a batch")
    ] = None,
    inline: Annotated[
        bool,
        typer.Option(
            help="a handler measured fast runs on the poll thread (per record, or a batch's "
            "first call); --no-inline: always on the worker threads"
        ),
    ] = True,
    retries: Annotated[int, typer.Option(help="retries after a failed attempt")] = 3,
    retry_backoff: Annotated[float, typer.Option(help="first retry delay, seconds")] = 0.1,
    dlq_topic: Annotated[
        str | None, typer.Option(help="dead-letter topic for records that keep failing")
    ] = None,
    on_failure: Annotated[
        OnFailure | None, typer.Option(help="without --dlq-topic: stop or skip a failed record")
    ] = None,
    count: Annotated[
        int | None, typer.Option(help="stop after exactly N records finished (and committed)")
    ] = None,
    until_idle: Annotated[
        float | None,
        typer.Option(
            help="stop once everything assigned is consumed to its end and nothing is held, "
            "for SECONDS"
        ),
    ] = None,
    commit_interval: Annotated[float, typer.Option(help="commit every SECONDS")] = 1.0,
    commit_every: Annotated[int, typer.Option(help="or every N records finished")] = 1000,
    assignor: Annotated[
        str, typer.Option(help="cooperative-sticky, range or roundrobin")
    ] = "cooperative-sticky",
    static_id: Annotated[
        str | None, typer.Option(help="group.instance.id (static membership)")
    ] = None,
    group_protocol: Annotated[
        str,
        typer.Option(
            help="classic, or consumer (KIP-848: the broker assigns; no --assignor, "
            "--session-timeout-ms or --heartbeat-ms)"
        ),
    ] = "classic",
    remote_assignor: Annotated[
        str | None, typer.Option(help="with --group-protocol consumer: uniform or range")
    ] = None,
    leave_group: Annotated[
        bool,
        typer.Option(
            help="leave the group when stopping (partitions move at once); --no-leave-group "
            "exits without leaving: partitions wait for the session timeout"
        ),
    ] = True,
    client_id: Annotated[str | None, typer.Option(help="client.id shown by the broker")] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(help="write one line per finished record to FILE (audit by lagless-id)"),
    ] = None,
    session_timeout_ms: Annotated[int, typer.Option(help="session.timeout.ms")] = 10_000,
    heartbeat_ms: Annotated[int, typer.Option(help="heartbeat.interval.ms")] = 3000,
    max_poll_interval_ms: Annotated[int, typer.Option(help="max.poll.interval.ms")] = 300_000,
    offset_reset: Annotated[
        str, typer.Option(help="where a group without commits starts: earliest or latest")
    ] = "earliest",
    revoke_budget: Annotated[
        float, typer.Option(help="seconds to let revoked partitions' records finish")
    ] = 5.0,
    shutdown_budget: Annotated[
        float, typer.Option(help="seconds to let in-flight records finish at stop")
    ] = 30.0,
    stall_seconds: Annotated[
        float, typer.Option(help="log a record unfinished for this long")
    ] = 60.0,
    metrics_port: Annotated[
        int | None, typer.Option(help="serve Prometheus metrics on this port")
    ] = None,
    record: Annotated[
        Path | None, typer.Option(help="write the run timeline to DIR/timeline.jsonl")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object at the end")] = (
        False
    ),
    connect_timeout: Annotated[
        float,
        typer.Option(
            min=1.0, help="seconds to wait for the cluster to answer at start before giving up"
        ),
    ] = 5.0,
) -> None:
    """Consume topics with a handler: concurrency beyond partitions, safe commits, DLQ.

    A first SIGTERM/Ctrl-C drains and commits (exit 0); a second stops at once (exit 130).
    Exit 1 on a failure (the summary is printed, with "error" under --json), 2 on bad usage.
    """
    topic = [*(topics_arg or []), *(topic_opt or [])]
    if not topic:
        raise ConfigError("give the topics to consume: TOPIC... or --topic TOPIC")
    if group is None:
        raise ConfigError("give the consumer group: --group GROUP")
    if metrics_port is not None and not 0 < metrics_port < 65536:
        raise ConfigError(f"--metrics-port {metrics_port} is not a port")
    given = {  # classic-protocol settings, passed only when given (EngineConfig judges them)
        field: value
        for field, param, value in (
            ("assignor", "assignor", assignor),
            ("session_timeout_ms", "session_timeout_ms", session_timeout_ms),
            ("heartbeat_interval_ms", "heartbeat_ms", heartbeat_ms),
        )
        if getattr(ctx.get_parameter_source(param), "name", "DEFAULT") != "DEFAULT"
    }
    config = EngineConfig.build(
        FLAGS,
        topics=tuple(topic),
        group_protocol=group_protocol,
        remote_assignor=remote_assignor,
        leave_group_on_close=leave_group,
        client_id=client_id,
        group=group,
        ordering=ordering,
        max_in_flight=max_in_flight,
        max_pending=max_pending,
        processes=processes,
        batch_size=batch_size,
        batch_linger_ms=batch_linger_ms,
        inline=inline,
        retries=retries,
        retry_backoff_s=retry_backoff,
        retry_backoff_max_s=max(5.0, retry_backoff),
        dlq_topic=dlq_topic,
        on_failure=on_failure,
        count=count,
        until_idle_s=until_idle,
        commit_interval_s=commit_interval,
        commit_every=commit_every,
        static_id=static_id,
        **given,
        max_poll_interval_ms=max_poll_interval_ms,
        auto_offset_reset=offset_reset,
        revoke_budget_s=revoke_budget,
        shutdown_budget_s=shutdown_budget,
        stall_seconds=stall_seconds,
    )
    run_handler = load_handler(handler, batch=batch_size is not None)
    conf = kafka_settings(ctx, check=False).to_librdkafka()
    check_reachable(conf, timeout=connect_timeout)
    metrics = Metrics(group=config.group)
    tune_gc()
    instance = client_id or static_id or f"{socket.gethostname()}-{os.getpid()}"
    with contextlib.ExitStack() as stack:
        events = None
        if record is not None:
            log_file = EventLog(record / EVENTS_FILE, instance)
            events = stack.enter_context(contextlib.closing(log_file))
        audit = stack.enter_context(contextlib.closing(Ledger(ledger))) if ledger else None
        show = stack.enter_context(progress_line(interactive() and not as_json))
        url = metrics_url("127.0.0.1", metrics_port)  # Metrics.serve binds 127.0.0.1
        # what `lagless ui` shows as owners
        board = StatusBoard(config.group, instance, url, topics=config.topics)
        engine = Engine(
            conf, config, run_handler, metrics=metrics, on_progress=show, events=events,
            ledger=audit,
        )  # fmt: skip
        board.follow(engine.status)
        if metrics_port is not None:
            metrics.serve(metrics_port, health=engine.health.status, status=board.to_json)
        stack.enter_context(Publisher(board, options(ctx).state_dir or default_state_dir()))
        stack.enter_context(recording(metrics, record, run_settings(config, handler)))
        code = run_and_report(engine, as_json=as_json)
    if code:
        raise typer.Exit(code)
