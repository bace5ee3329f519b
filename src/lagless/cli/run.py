"""`lagless run module:app`: run a :class:`lagless.App` (like ``uvicorn module:app``).

The consume options given on the command line override every handler's own; the global
``--bootstrap``/``--config``/``--state-dir`` override the app's connection settings. Signals as
``lagless consume``: the first SIGTERM/SIGINT drains and exits 0 with the summaries, a second
stops at once (exit 130).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from lagless.app import App, environment
from lagless.app.app import imported_by_cli
from lagless.broker.embedded import default_state_dir
from lagless.cli.common import (
    interactive,
    options,
    print_json,
    settings,
    with_properties,
)
from lagless.cli.consume_run import EXIT_INTERRUPTED, describe
from lagless.cli.run_status import RunRecording, StatusPublishing, announce, run_status
from lagless.engine import OnFailure, Ordering
from lagless.errors import ConfigError
from lagless.observe.instance import StatusBoard
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)


def load_app(spec: str) -> App:
    """``module:attribute`` naming an App (the current directory is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{spec!r} is not module:attribute (e.g. myservice:app)")
    if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
        dotted = module_name.removesuffix(".py").replace(os.sep, "/").strip("./").replace("/", ".")
        raise ConfigError(
            f"{module_name!r} is a file path, not a module name: lagless run {dotted}:{attr} "
            "(from the directory it is importable from)"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        with imported_by_cli(module_name):
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}") from None
    except ConfigError:
        raise  # e.g. a bad handler option: already one line naming the handler
    except Exception as exc:  # the module raised while importing: where, in one line
        log.debug("importing %s", module_name, exc_info=True)
        raise ConfigError(
            f"importing {module_name!r} raised {type(exc).__name__}: {_where(exc)}"
        ) from None
    app: object = module
    for name in attr.split("."):  # module:attribute, or module:obj.attribute
        if not hasattr(app, name):
            raise ConfigError(f"{module_name} has no attribute {attr!r} (e.g. {module_name}:app)")
        app = getattr(app, name)
    if not isinstance(app, App):
        raise ConfigError(f"{spec} is {type(app).__name__}, not a lagless.App")
    return app


def _where(exc: Exception) -> str:
    """``exc``'s message and the file and line it was raised at: the deepest frame in the
    user's code (under the current directory), not in the standard library or a package."""
    if isinstance(exc, SyntaxError):
        name, line, message = exc.filename, exc.lineno, exc.msg
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        here = os.getcwd() + os.sep
        mine = [f for f in frames if f.filename.startswith(here)] or frames[-1:]
        name, line, message = mine[-1].filename, mine[-1].lineno, str(exc)
    return f"{message} ({os.path.relpath(name) if name else '?'}, line {line})"


def run(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="module:attribute of a lagless.App")],
    group: Annotated[str | None, typer.Option(help="consumer group id (every handler)")] = None,
    ordering: Annotated[Ordering | None, typer.Option(help="partition, key or unordered")] = None,
    max_in_flight: Annotated[int | None, typer.Option(help="records handled at once")] = None,
    max_pending: Annotated[
        int | None, typer.Option(help="per partition: records held before it is paused")
    ] = None,
    processes: Annotated[int | None, typer.Option(help="N processes; 0: threads")] = None,
    batch_size: Annotated[
        int | None, typer.Option(help="batch handlers: batches of up to N records")
    ] = None,
    batch_linger_ms: Annotated[
        float | None, typer.Option(help="batch handlers: wait up to MS to fill a batch")
    ] = None,
    no_inline: Annotated[
        bool, typer.Option("--no-inline", help="every handler call on worker threads")
    ] = False,
    retries: Annotated[int | None, typer.Option(help="retries after a failed attempt")] = None,
    retry_backoff: Annotated[float | None, typer.Option(help="first retry delay, s")] = None,
    dlq_topic: Annotated[str | None, typer.Option(help="dead-letter topic")] = None,
    on_failure: Annotated[
        OnFailure | None, typer.Option(help="without a DLQ topic: stop or skip")
    ] = None,
    count: Annotated[int | None, typer.Option(help="stop after N records finished")] = None,
    until_idle: Annotated[
        float | None, typer.Option(help="stop after SECONDS without records or work")
    ] = None,
    commit_interval: Annotated[float | None, typer.Option(help="commit every SECONDS")] = None,
    commit_every: Annotated[int | None, typer.Option(help="or every N records")] = None,
    assignor: Annotated[
        str | None, typer.Option(help="cooperative-sticky, range or roundrobin")
    ] = None,
    static_id: Annotated[
        str | None, typer.Option(help="group.instance.id (suffixed per handler if shared)")
    ] = None,
    client_id: Annotated[str | None, typer.Option(help="client.id")] = None,
    group_protocol: Annotated[
        str | None, typer.Option(help="classic or consumer (KIP-848)")
    ] = None,
    remote_assignor: Annotated[
        str | None, typer.Option(help="group protocol consumer: uniform or range")
    ] = None,
    no_leave_group: Annotated[
        bool, typer.Option("--no-leave-group", help="stop without sending LeaveGroup")
    ] = False,
    session_timeout_ms: Annotated[int | None, typer.Option(help="session.timeout.ms")] = None,
    heartbeat_ms: Annotated[int | None, typer.Option(help="heartbeat.interval.ms")] = None,
    max_poll_interval_ms: Annotated[int | None, typer.Option(help="max.poll.interval.ms")] = None,
    offset_reset: Annotated[str | None, typer.Option(help="earliest or latest")] = None,
    revoke_budget: Annotated[float | None, typer.Option(help="revoke wait, s")] = None,
    shutdown_budget: Annotated[float | None, typer.Option(help="shutdown wait, s")] = None,
    stall_seconds: Annotated[float | None, typer.Option(help="log records this old")] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="serve /metrics, /healthz, /readyz and /status on this port")
    ] = None,
    metrics_host: Annotated[
        str | None,
        typer.Option(help="address to serve them on (default 127.0.0.1); 0.0.0.0 for a pod"),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(help="sample the run into DIR (DIR/HANDLER for several) for lagless report"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print one JSON object (summary per handler)")
    ] = False,
) -> None:
    """Run a lagless.App; consume options given here override every handler's."""
    if metrics_host is not None and metrics_port is None and not environment.read().metrics_port:
        raise ConfigError("--metrics-host serves nothing without --metrics-port PORT")
    app = load_app(target)
    overrides: dict[str, Any] = {
        "group": group,
        "ordering": ordering,
        "max_in_flight": max_in_flight,
        "max_pending": max_pending,
        "processes": processes,
        "batch_size": batch_size,
        "batch_linger_ms": batch_linger_ms,
        "inline": False if no_inline else None,
        "retries": retries,
        "retry_backoff_s": retry_backoff,
        "retry_backoff_max_s": None if retry_backoff is None else max(5.0, retry_backoff),
        "dlq_topic": dlq_topic,
        "on_failure": on_failure,
        "count": count,
        "until_idle_s": until_idle,
        "commit_interval_s": commit_interval,
        "commit_every": commit_every,
        "assignor": assignor,
        "static_id": static_id,
        "client_id": client_id,
        "group_protocol": group_protocol,
        "remote_assignor": remote_assignor,
        "leave_group_on_close": False if no_leave_group else None,
        "session_timeout_ms": session_timeout_ms,
        "heartbeat_interval_ms": heartbeat_ms,
        "max_poll_interval_ms": max_poll_interval_ms,
        "auto_offset_reset": offset_reset,
        "revoke_budget_s": revoke_budget,
        "shutdown_budget_s": shutdown_budget,
        "stall_seconds": stall_seconds,
    }
    opts = options(ctx)
    if opts.bootstrap or opts.config or opts.state_dir:
        connection = settings(ctx)
    else:  # the app's own connection, with the -X properties if any
        connection = with_properties(app.settings(), opts)
    configured = app.configured(connection, **overrides)
    metrics = configured.metrics_address(metrics_port, metrics_host)  # else the environment's
    names = [spec.name for spec in configured.specs]
    live = interactive() and not as_json

    def started(handler_metrics: Mapping[str, Metrics], boards: Mapping[str, StatusBoard]) -> None:
        """Said once every engine started (a start-up failure stays one line)."""
        announce(target, configured, connection, metrics)
        rec.start(handler_metrics)
        published.start(boards)  # lagless ui sees the owners

    state_dir = opts.state_dir or default_state_dir()
    with (
        run_status(names, live) as status,
        RunRecording(record, target, configured) as rec,
        StatusPublishing(state_dir) as published,
    ):
        summaries = configured.run(metrics[1], metrics[0], on_progress=status, on_start=started)
    if as_json:
        print_json({name: s.to_json() for name, s in summaries.items()})
    else:
        for name, summary in summaries.items():
            sys.stdout.write(f"{name}: {describe(summary)}\n")  # one line each, never wrapped
    if configured.hurried:  # a second signal: stopped without waiting for in-flight records
        raise typer.Exit(EXIT_INTERRUPTED)
