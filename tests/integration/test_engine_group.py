"""Two, then three consumer processes in one group, members joining and leaving while
records flow: nothing is lost.

On the embedded broker (Tansu 0.6) the group runs with the eager ``range`` assignor: with
cooperative-sticky and offset commits, Tansu hands a member's partitions to a joining member
without telling the old owner (its commits then fail with ILLEGAL_GENERATION while it keeps
fetching), and in some runs the joiner never gets an assignment at all; plain confluent-kafka
consumers show the same. Against a real Kafka (LAGLESS_TEST_BOOTSTRAP) the test uses the
default, cooperative-sticky."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine.events import EVENTS_FILE, EventKind
from lagless.lab.model import read_events
from lagless.produce.producer import run_load
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.conftest import Cluster, wait_for
from tests.integration.engine_helpers import (
    LEDGER_HANDLER,
    consume_cmd,
    finish,
    read_ledgers,
    spawn,
    wait_for_lines,
)

pytestmark = pytest.mark.integration

RATE = 100.0
DURATION = 120.0  # at most: the load stops AFTER_S after the first member left
AFTER_S = 8.0


def test_members_join_and_leave_while_records_flow(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=6)
    spec = WorkloadSpec(Workload.JOBS, sleep_ms=(5, 15), seed=5, id_prefix="m")
    produced: list[int] = []
    stop = threading.Event()
    producer = threading.Thread(
        target=lambda: produced.append(
            run_load(
                cluster.conf, topic, generate(spec), rate=RATE, duration=DURATION, stop=stop
            ).produced
        )
    )
    assignor = "range" if cluster.embedded else "cooperative-sticky"
    cmd = consume_cmd(
        cluster.bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--ordering", "key",
        "--max-in-flight", "16", "--on-failure", "stop", "--until-idle", "6", "--json",
        "--assignor", assignor,
    )  # fmt: skip
    ledgers = [tmp_path / f"member{i}" for i in range(3)]
    producer.start()
    record = tmp_path / "first"  # the first member's event log
    members = [spawn([*cmd, "--record", str(record)], ledgers[0]), spawn(cmd, ledgers[1])]
    try:
        time.sleep(9)
        # On a loaded machine a start and join can take longer than the sleeps: the third
        # joins once the first two have work, and the first leaves once the third has.
        for ledger in ledgers[:2]:
            assert wait_for_lines(ledger, 1, timeout=60) >= 1, "a first member got no work"
        members.append(spawn(cmd, ledgers[2]))  # a third joins
        time.sleep(9)
        assert wait_for_lines(ledgers[2], 1, timeout=60) >= 1, "the third member got no work"
        # and the first has taken its new assignment (a starved poll loop serves it late)
        wait_for(lambda: assignments(record) >= 2, 60, "the first member's second assignment")
        members[0].send_signal(signal.SIGTERM)  # the first leaves cleanly
        code, out, err = finish(members[0], timeout=60)
        assert code == 0, err[-2000:]
        first = json.loads(out)
        time.sleep(AFTER_S)  # records still flow to the two that stay
        stop.set()
        producer.join(timeout=60)
        results = [finish(m, timeout=90) for m in members[1:]]
    finally:
        for m in members:
            if m.poll() is None:
                m.kill()
        stop.set()
    for code, _out, err in results:
        assert code == 0, err[-2000:]
    ids = {f"m{i}" for i in range(produced[0])}
    assert produced[0] >= RATE * 20  # records flowed through the join and the leave
    ledger = read_ledgers(ledgers)
    assert set(ledger) == ids, f"lost {sorted(ids - set(ledger))[:10]}"
    summaries = [first, *(json.loads(out) for _code, out, _err in results)]
    assert sum(s["processed"] for s in summaries) == sum(ledger.values())
    assert all(s["processed"] > 0 for s in summaries), "every member did work"
    assert first["rebalances"] >= 2, "the first member saw the third join"


def assignments(record: Path) -> int:
    """How many assignments a member's event log (``--record``) shows so far."""
    return sum(e.kind is EventKind.ASSIGNED for e in read_events(record / EVENTS_FILE))
