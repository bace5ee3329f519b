"""What the rebalance lab (and a Kubernetes probe) needs from the engine, on a real broker:
group-life events, the ledger, /healthz and /readyz, stopping without leaving the group, and
KIP-848 (``--group-protocol consumer``) on librdkafka's mock cluster (Tansu has no KIP-848)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.broker.embedded import free_port
from lagless.engine.results.ledger import read_ledger
from lagless.lab.model import EventKind, read_events
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import LAGLESS, consume_cmd, finish, produce_jobs, spawn

pytestmark = pytest.mark.integration


def probe(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what} not within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - started


def test_events_ledger_and_probes_follow_the_group_life(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 300, sleep_ms=(0, 1), keys=20)
    port = free_port()
    record, ledger = tmp_path / "run", tmp_path / "ledger.tsv"
    cmd = consume_cmd(
        cluster.bootstrap, topic, group, "--handler", "sleep", "--on-failure", "stop",
        "--metrics-port", str(port), "--record", str(record), "--ledger", str(ledger),
        "--client-id", "member-a", "--json",
    )  # fmt: skip
    proc = spawn(cmd, tmp_path / "unused")
    try:
        wait_until(lambda: _answers(port), 30, "the metrics endpoint")
        status, body = probe(port, "/healthz")
        assert status == 200 and body["alive"] is True
        wait_until(lambda: probe(port, "/readyz")[0] == 200, 30, "ready")
        assert probe(port, "/readyz")[1]["assigned"] == 2
        wait_until(lambda: ledger.exists() and len(read_ledger(ledger)) >= 300, 30, "300 done")
        proc.send_signal(signal.SIGTERM)
        code, out, err = finish(proc, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, err
    assert json.loads(out)["processed"] == 300
    lines = read_ledger(ledger)
    assert Counter(line.id for line in lines) == Counter(ids)
    assert all(line.outcome == "ok" and line.done_ms >= line.ts_ms for line in lines)
    events = read_events(record / "events.jsonl")
    kinds = [e.kind for e in events]
    assert {e.instance for e in events} == {"member-a"}
    for earlier, later in [
        (EventKind.SUBSCRIBED, EventKind.ASSIGNED), (EventKind.ASSIGNED, EventKind.CONSUMING),
        (EventKind.CONSUMING, EventKind.READY), (EventKind.READY, EventKind.STOPPING),
        (EventKind.STOPPING, EventKind.STOPPED),
    ]:  # fmt: skip
        assert kinds.index(earlier) < kinds.index(later), kinds
    consuming = {p for e in events if e.kind is EventKind.CONSUMING for p in e.partitions}
    assert consuming == {0, 1}
    assert events[-1].kind is EventKind.STOPPED and events[-1].left_group is True


def _answers(port: int) -> bool:
    try:
        probe(port, "/healthz")
    except OSError:
        return False
    return True


def _takeover_seconds(
    cluster: Cluster, topic: str, group: str, tmp_path: Path, *leave_flag: str
) -> tuple[float, list[object]]:
    """Member A owns both partitions; B joins; A stops (SIGTERM). Seconds from A's exit until
    B owns both partitions, and A's STOPPED event."""
    session = ["--session-timeout-ms", "12000", "--heartbeat-ms", "1000", "--assignor", "range"]
    port_b = free_port()
    a = subprocess.Popen(
        [*consume_cmd(cluster.bootstrap, topic, group, "--handler", "noop", "--on-failure",
                      "stop", "--record", str(tmp_path / "a"), *session, *leave_flag)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    b = subprocess.Popen(
        [*consume_cmd(cluster.bootstrap, topic, group, "--handler", "noop", "--on-failure",
                      "stop", "--metrics-port", str(port_b), *session)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: _answers(port_b) and probe(port_b, "/readyz")[0] == 200, 60, "B ready")
        a.send_signal(signal.SIGTERM)
        code, _out, err = finish(a, 30)
        assert code == 0, err
        took = wait_until(lambda: probe(port_b, "/readyz")[1]["assigned"] == 2, 60, "B owns all")
        events = read_events(tmp_path / "a" / "events.jsonl")
    finally:
        for proc in (a, b):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return took, [e.left_group for e in events if e.kind is EventKind.STOPPED]


@pytest.mark.slow
def test_stopping_without_leaving_makes_the_group_wait_for_the_session(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """--no-leave-group exits without LeaveGroup: the partitions move only once the 12 s session
    expires; leaving moves them at once (on Tansu after its join hold of session / 2 = 6 s)."""
    topic = make_topic(partitions=2)
    left, left_events = _takeover_seconds(cluster, topic, "g-leave", tmp_path / "leave")
    stayed, stayed_events = _takeover_seconds(
        cluster, topic, "g-stay", tmp_path / "stay", "--no-leave-group"
    )
    assert left_events == [True] and stayed_events == [False]
    assert stayed >= 11.0, f"partitions moved {stayed:.1f} s after a member exited without leaving"
    assert left < stayed, (left, stayed)


def test_group_protocol_consumer_rejects_classic_settings(cluster: Cluster) -> None:
    result = run_cli(
        "consume", "--topic", "t", "--group", "g", "--group-protocol", "consumer",
        "--session-timeout-ms", "6000", "--on-failure", "stop", cluster=cluster,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lagless: error: --session-timeout-ms: not with --group-protocol consumer (KIP-848 moves "
        "the assignor and the session timeout to the broker)"
    ]


def test_kip848_consumes_everything_on_the_mock_cluster(mock_bootstrap: str) -> None:
    """KIP-848 end to end: --group-protocol consumer on librdkafka's mock cluster."""
    topic = "kip848-ledger"
    ids = produce_jobs({"bootstrap.servers": mock_bootstrap}, topic, 200, sleep_ms=(0, 1))
    result = _consume_kip848(mock_bootstrap, topic)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["processed"] == len(ids) == 200
    assert summary["rebalances"] >= 1


def _consume_kip848(bootstrap: str, topic: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LAGLESS, "-b", bootstrap, "consume", "--topic", topic, "--group", "g-kip848",
         "--group-protocol", "consumer", "--handler", "sleep", "--on-failure", "stop",
         "--until-idle", "2", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
