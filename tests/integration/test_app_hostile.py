"""lagless.App used as a hostile user would, on the real broker: handlers that return odd
things (a generator, a set, a coroutine from a sync function, NaN, an ``Out`` to a topic that
is empty or does not exist), an async callable object, ``run_async`` cancelled while it starts,
``lagless run`` of a module that fails to import. Each record that cannot succeed ends in the
DLQ with a reason naming the problem; nothing is created or written silently."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from pydantic import BaseModel

import lagless
from lagless.engine.results.dlq import H_ERROR, H_OFFSET, H_TOPIC
from lagless.errors import ConfigError
from lagless.kafka.admin import committed_offsets
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import probe_conf
from lagless.testing import TestKafka
from tests.conftest import LAGLESS

pytestmark = pytest.mark.integration

TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "until_idle_s": 1.5,
}  # fmt: skip


async def _echo(text: str) -> str:
    return text


def _reasons(kafka: TestKafka, dlq: str, count: int) -> dict[int, str]:
    """Each dead letter's input offset -> its reason."""
    letters = kafka.read(dlq, count=count)
    return {int(r.header(H_OFFSET) or b"-1"): (r.header(H_ERROR) or b"").decode() for r in letters}


def _topics(kafka: TestKafka) -> set[str]:
    probe = make_consumer(probe_conf(kafka.conf))
    try:
        return set(probe.list_topics(timeout=10).topics)
    finally:
        probe.close()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_odd_return_values_go_to_the_dlq_with_a_reason_and_create_nothing(
    lagless_kafka: TestKafka, is_async: bool
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    missing = f"{out}-typo"
    app = lagless.App(group=lagless_kafka.group(), retries=0, **TIMINGS)
    returns: dict[str, Any] = {
        "generator": lambda t: (x for x in [t]),
        "set": lambda t: {t},
        "coroutine": _echo,  # a sync function returning a coroutine: the work never runs
        "nan": lambda t: {"v": float("nan")},  # not JSON: would be written as NaN
        "empty-topic": lambda t: lagless.Out(value=t, topic=""),
        "missing-topic": lambda t: lagless.Out(value=t, topic=missing),
        "ok": lambda t: t,
    }

    def odd(text: str) -> object:
        return returns[text](text)

    async def odd_async(text: str) -> object:  # a coroutine it returns is not awaited either
        return returns[text](text)

    odd_async.__name__ = "odd"
    app.handler(source, value=str, output=out, dlq=dlq)(odd_async if is_async else odd)

    lagless_kafka.produce(source, list(returns))
    summary = app.configured(lagless_kafka.settings).run()["odd"]

    assert (summary.ok, summary.dlq) == (1, 6)
    assert [r.value for r in lagless_kafka.read(out)] == [b"ok"]
    reasons = _reasons(lagless_kafka, dlq, 6)
    assert "generator" in reasons[0] and "never ran" in reasons[0]
    assert "set" in reasons[1] and "JSON" in reasons[1]
    assert "coroutine" in reasons[2] and "async def" in reasons[2]
    assert "NaN" in reasons[3] or "not JSON compliant" in reasons[3]
    assert "Out(topic='')" in reasons[4]
    assert f"topic {missing!r} does not exist" in reasons[5]
    assert missing not in _topics(lagless_kafka)  # not auto-created by the output producer


def test_an_async_callable_object_is_awaited(lagless_kafka: TestKafka) -> None:
    source, out = lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    class Caller:
        __name__ = "caller"

        async def __call__(self, text: str) -> str:
            await asyncio.sleep(0.01)
            return text.upper()

    app.handler(source, value=str, output=out, on_failure="stop")(Caller())
    lagless_kafka.produce(source, ["a", "b"])
    summary = app.configured(lagless_kafka.settings).run()["caller"]

    assert summary.ok == 2
    assert sorted(r.value for r in lagless_kafka.read(out, 2)) == [b"A", b"B"]


def _endless_app(kafka: TestKafka, source: str) -> lagless.App:
    """An app on ``kafka`` with a no-op handler of ``source`` and no stop condition."""
    app = lagless.App(group=kafka.group(), session_timeout_ms=6000, heartbeat_interval_ms=1500)

    @app.handler(source, on_failure="stop")
    def h(value: bytes) -> None: ...

    return app.configured(kafka.settings)


def _app_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("lagless")]


@pytest.mark.parametrize("after", [0.0, 4.0], ids=["while-starting", "while-running"])
def test_run_async_cancelled_stops_the_app(lagless_kafka: TestKafka, after: float) -> None:
    source = lagless_kafka.topic()
    lagless_kafka.produce(source, [b"x"] * 5)
    configured = _endless_app(lagless_kafka, source)

    async def main() -> None:
        task = asyncio.create_task(configured.run_async())
        await asyncio.sleep(after)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert configured.health == {"alive": False, "ready": False, "handlers": {}}
    assert not _app_threads(), "the app still runs after its task was cancelled"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('raise RuntimeError("no config here")\n',
         "importing 'service' raised RuntimeError: no config here (service.py, line 1)"),
        ("def (:\n", "importing 'service' raised SyntaxError: invalid syntax (service.py, line 1)"),
        ("import lagless\napp = lagless.App(group='g')\n",
         "service has no attribute 'nope' (e.g. service:app)"),
        ("import lagless\napp = lagless.App(group='g')\n"
         "@app.handler('t', on_failure='stop', processes=2)\ndef h(value): ...\n",
         "handler h: processes=2: an App handler runs in threads"),
        ("import lagless\napp = lagless.App(group='g')\n"
         "@app.handler('t', on_failure='stop', output_conf={'lingr.ms': 5})\ndef h(value): ...\n",
         'handler h: output_conf: No such configuration property: "lingr.ms"'),
        ("import lagless\napp = lagless.App(group='g')\n"
         "@app.handler('t', on_failure='stop')\ndef h(value): ...\napp.run()\n",
         "app.run() was called while lagless run imported 'service'"),
    ],
    ids=["raises", "syntax-error", "no-attribute", "processes", "output-conf", "runs-at-import"],
)
def test_lagless_run_of_a_module_that_fails_is_one_line(
    lagless_kafka: TestKafka, tmp_path: Path, source: str, message: str
) -> None:
    (tmp_path / "service.py").write_text(source)
    target = "service:nope" if "attribute" in message else "service:app"
    env = {**os.environ, "LAGLESS_BOOTSTRAP": lagless_kafka.bootstrap}  # as the module sees it
    done = subprocess.run(
        [LAGLESS, "-b", lagless_kafka.bootstrap, "run", target],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_lagless_run_with_its_metrics_port_taken_is_one_line_and_consumes_nothing(
    lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    source, group = lagless_kafka.topic(), lagless_kafka.group()
    lagless_kafka.produce(source, [b"x"])
    (tmp_path / "service.py").write_text(
        f"import lagless\napp = lagless.App(group={group!r})\n"
        f"@app.handler({source!r}, on_failure='stop')\ndef h(value): ...\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [LAGLESS, "-b", lagless_kafka.bootstrap, "run", "service:app",
             "--metrics-port", str(port), "--until-idle", "1"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"cannot serve metrics on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not committed_offsets(lagless_kafka.conf, group, [source])  # never joined


def _own_address() -> str | None:
    """This machine's address other than loopback (what a kubelet would call), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # UDP: picks a route, sends nothing
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def _status(url: str) -> int | str:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return type(exc).__name__


def test_probes_answer_on_the_pods_address_with_metrics_host(lagless_kafka: TestKafka) -> None:
    address = _own_address()
    if address is None:
        pytest.skip("this machine has no address other than loopback")
    configured = _endless_app(lagless_kafka, lagless_kafka.topic())
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with configured.running(metrics_port=port):  # the default: loopback only
        assert _status(f"http://127.0.0.1:{port}/readyz") == 200
        assert _status(f"http://{address}:{port}/readyz") != 200
    with configured.running(metrics_port=port, metrics_host="0.0.0.0"):
        assert _status(f"http://{address}:{port}/readyz") == 200
        assert _status(f"http://{address}:{port}/healthz") == 200


class Reading(BaseModel):
    sensor: str
    celsius: float


def test_hostile_values_and_keys_reach_the_dlq_whole_with_reason_and_coordinates(
    lagless_kafka: TestKafka,
) -> None:
    source, dlq = lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    seen: list[Reading] = []

    @app.handler(source, value=Reading, key=str, dlq=dlq)
    def read(reading: Reading) -> None:
        seen.append(reading)

    huge = b"[" * 900_000  # close to the 1 MB default record limit, and not JSON
    values: list[tuple[bytes | None, bytes | None]] = [
        (b"", None), (None, None), (b"\xff\xfe", None), (b"[1, 2]", None), (huge, None),
        (b'{"sensor": "s1", "celsius": 21.5}', b"\xff"),  # a key that is not UTF-8
        (b'{"sensor": "s1", "celsius": 21.5}', b"k"),
    ]  # fmt: skip
    producer = Producer({**lagless_kafka.conf, "message.max.bytes": 2_000_000})
    for value, key in values:
        producer.produce(source, value, key=key)
    assert producer.flush(30) == 0
    summary = app.configured(lagless_kafka.settings).run()["read"]

    assert (summary.ok, summary.dlq) == (1, 6) and seen == [Reading(sensor="s1", celsius=21.5)]
    letters = sorted(lagless_kafka.read(dlq, count=6), key=lambda r: int(r.header(H_OFFSET) or 0))
    assert [(r.value, r.key) for r in letters] == values[:6]  # kept whole, key and value
    reasons = [(r.header(H_ERROR) or b"").decode() for r in letters]
    assert reasons[0].startswith("not a valid Reading: Invalid JSON")
    assert reasons[1] == "null, not a Reading"
    assert reasons[3] == "not a valid Reading: Input should be an object"
    assert reasons[5].startswith("not UTF-8 text")
    assert {r.header(H_TOPIC) for r in letters} == {source.encode()}


def test_an_app_started_twice_at_once_runs_once(lagless_kafka: TestKafka) -> None:
    configured = _endless_app(lagless_kafka, lagless_kafka.topic())

    async def main() -> list[BaseException | dict[str, lagless.RunSummary]]:
        first = asyncio.create_task(configured.run_async())
        second = asyncio.create_task(configured.run_async())  # starts while the first starts
        await asyncio.sleep(2.0)
        configured.stop()
        return await asyncio.gather(first, second, return_exceptions=True)

    results = asyncio.run(main())
    refused = [r for r in results if isinstance(r, ConfigError)]
    assert len(refused) == 1 and "already running" in str(refused[0]), results
    assert not _app_threads(), "a second set of engines was left running"
