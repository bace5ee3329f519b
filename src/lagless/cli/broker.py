"""`lagless broker start|stop|status`: the embedded broker (Tansu), or with ``--kind mock``
librdkafka's mock cluster (a test cluster, not a production broker: lagless.broker.mock)."""

from __future__ import annotations

from typing import Annotated

import typer

from lagless.broker.embedded import DEFAULT_PORT, BrokerState, EmbeddedBroker
from lagless.broker.mock import MOCK_NAME, MockBroker, MockSettings, MockState
from lagless.cli.common import given, options, out_console, print_json
from lagless.errors import ConfigError

app = typer.Typer(help="Run the embedded Kafka-compatible broker (Tansu).", no_args_is_help=True)


KINDS = ("tansu", "mock")
Kind = Annotated[str, typer.Option(help="tansu (the embedded broker) or mock (librdkafka's)")]


def _broker(ctx: typer.Context) -> EmbeddedBroker:
    return EmbeddedBroker(options(ctx).state_dir)


def _mock(ctx: typer.Context, kind: str) -> MockBroker | None:
    """The mock cluster's holder for ``--kind mock``, None for tansu; ConfigError otherwise."""
    if kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}: choose {' or '.join(KINDS)}")
    return MockBroker(options(ctx).state_dir) if kind == "mock" else None


def _mock_hint(ctx: typer.Context) -> str:
    """Where the embedded broker is not running but a mock cluster is: how to reach it."""
    held = MockBroker(options(ctx).state_dir).status()
    if held is None:
        return ""
    return f" (librdkafka's mock cluster runs at {held.bootstrap}: add --kind mock)"


JsonFlag = Annotated[bool, typer.Option("--json", help="one JSON object")]


def _tansu_json(state: BrokerState | None) -> dict[str, object]:
    if state is None:
        return {"running": False}
    return {"running": True, "bootstrap": state.bootstrap, "pid": state.pid,
            "storage": state.storage, "log": state.log_path}  # fmt: skip


def _mock_json(state: MockState | None) -> dict[str, object]:
    if state is None:
        return {"running": False, "kind": "mock"}
    return {"running": True, "kind": "mock", "name": MOCK_NAME, "bootstrap": state.bootstrap,
            "pid": state.pid, "brokers": state.brokers, "log": state.log_path}  # fmt: skip


@app.command()
def start(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(min=1, max=65535, help="port on 127.0.0.1")] = DEFAULT_PORT,
    storage: Annotated[
        str, typer.Option(help="'memory' (default) or an s3:// URL (AWS_* variables apply)")
    ] = "memory",
    kind: Kind = "tansu",
    brokers: Annotated[int, typer.Option(min=1, max=9, help="mock: brokers")] = 1,
    rtt_ms: Annotated[int, typer.Option(min=0, help="mock: each broker's round trip, ms")] = 0,
    consumer_session_ms: Annotated[
        int | None, typer.Option(min=1, help="mock: KIP-848 group.consumer.session.timeout.ms")
    ] = None,
    consumer_heartbeat_ms: Annotated[
        int | None, typer.Option(min=1, help="mock: KIP-848 group.consumer.heartbeat.interval.ms")
    ] = None,
    rebalance_delay_ms: Annotated[
        int | None, typer.Option(min=0, help="mock: classic group.initial.rebalance.delay.ms")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start the broker in the background (no-op if it already runs)."""
    mock = _mock(ctx, kind)
    foreign = ("port", "storage") if mock is not None else (
        "brokers", "rtt_ms", "consumer_session_ms", "consumer_heartbeat_ms", "rebalance_delay_ms"
    )  # fmt: skip
    for name in foreign:
        if given(ctx, name):
            flag = "--" + name.replace("_", "-")
            other = (
                "the embedded broker (tansu; the mock picks its own port)"
                if mock
                else "--kind mock"
            )
            raise ConfigError(f"{flag} applies to {other}, not --kind {kind}")
    if mock is not None:
        held = mock.start(MockSettings(brokers, rtt_ms, consumer_session_ms,
                                       consumer_heartbeat_ms, rebalance_delay_ms))  # fmt: skip
        if as_json:
            print_json(_mock_json(held))
        else:
            out_console.print(f"{MOCK_NAME} running at {held.bootstrap} (pid {held.pid})")
        return
    state = _broker(ctx).start(port=port, storage=storage)
    if as_json:
        print_json(_tansu_json(state))
    else:
        out_console.print(
            f"broker running at {state.bootstrap} (pid {state.pid}, log {state.log_path})"
        )


@app.command()
def stop(
    ctx: typer.Context,
    purge: Annotated[
        bool, typer.Option("--purge", help="also delete the state directory's files (the log)")
    ] = False,
    kind: Kind = "tansu",
    as_json: JsonFlag = False,
) -> None:
    """Stop the broker (SIGTERM, SIGKILL after 10 s). It keeps its state directory (the log:
    --purge deletes it); a memory broker's topics and records end with it, an s3:// one's stay
    in the bucket."""
    mock = _mock(ctx, kind)
    if mock is not None:
        stopped = bool(mock.stop())
        if as_json:
            print_json({"kind": "mock", "stopped": stopped})
        else:
            out_console.print("mock cluster stopped" if stopped else "mock cluster was not running")
        return
    broker = _broker(ctx)
    state = broker.stop()
    removed = broker.purge() if purge else None
    if as_json:
        doc: dict[str, object] = {"kind": "tansu", "stopped": state is not None}
        if removed is not None:
            doc["removed"] = [str(path) for path in removed]
        print_json(doc)
        return
    out_console.print("broker stopped" if state else f"broker was not running{_mock_hint(ctx)}")
    if removed is not None:
        out_console.print(f"removed {len(removed)} files from {broker.state_dir}")


@app.command()
def status(
    ctx: typer.Context,
    as_json: JsonFlag = False,
    kind: Kind = "tansu",
) -> None:
    """Print the bootstrap address, or say it is not running (exit 0); exit 1 if its process
    died without being stopped."""
    mock = _mock(ctx, kind)
    if mock is not None:
        held = mock.status()
        if as_json:
            print_json(_mock_json(held))
        elif held is None:
            out_console.print("mock cluster is not running")
        else:
            print(held.bootstrap)
        return
    state = _broker(ctx).status()
    if as_json:
        print_json(_tansu_json(state))
    elif state is None:
        out_console.print(f"broker is not running{_mock_hint(ctx)}")
    else:
        print(state.bootstrap)
