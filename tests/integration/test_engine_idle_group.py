"""``--until-idle`` in a group of ``lagless consume`` processes: every member exits 0 once its
group has settled and nothing is left for it, every record processed once, all committed.

On the embedded broker (Tansu 0.6) with cooperative-sticky, a member that left while its own
JoinGroup was pending stayed the group's leader for good: the other member rejoined for ever and
never got a partition (before members waited to be settled in the group, it never exited). Where
Tansu cannot show it (KIP-848), librdkafka's mock cluster does."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.kafka.admin import committed_offsets
from lagless.kafka.offsets import end_offsets
from tests.conftest import Cluster, wait_for
from tests.integration.engine_helpers import (
    LEDGER_HANDLER,
    assert_exactly_once,
    consume_cmd,
    finish,
    produce_jobs,
    read_ledgers,
    spawn,
)
from tests.integration.engine_helpers.mock import lines, mock_committed, mock_ends

pytestmark = pytest.mark.integration


def member(
    bootstrap: str, topic: str, group: str, ledger: Path, *flags: str
) -> subprocess.Popen[str]:
    cmd = consume_cmd(
        bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--on-failure", "stop", "--json",
        *flags,
    )  # fmt: skip
    return spawn(cmd, ledger)


def finish_all(procs: list[subprocess.Popen[str]], timeout: float) -> list[dict[str, object]]:
    """Each process's summary; each must exit 0 within ``timeout`` s from now."""
    deadline = time.monotonic() + timeout
    summaries = []
    try:
        for proc in procs:
            code, out, err = finish(proc, max(1.0, deadline - time.monotonic()))
            assert code == 0, err[-3000:]
            summaries.append({**json.loads(out), "log": err[-4000:]})
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return summaries


def test_a_member_started_later_exits_once_the_first_left_cooperative_sticky(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    """The report: the second member starts once the first processed a quarter. Both exit 0
    (the first once its cooperative rebalance settled, the second once it got the first's
    partitions and found them consumed), every record once, committed at the ends."""
    topic = make_topic(partitions=6)
    ids = produce_jobs(cluster.conf, topic, 6000, sleep_ms=(3, 9), keys=50)
    flags = ["--until-idle", "3", "--session-timeout-ms", "10000", "--heartbeat-ms", "2500"]
    ledgers = [tmp_path / "first", tmp_path / "second"]
    procs = [member(cluster.bootstrap, topic, group, ledgers[0], *flags)]
    try:
        wait_for(lambda: lines(ledgers[0]) >= 1500, 60, "a quarter processed by the first")
    except AssertionError:
        finish_all(procs, 1)
        raise
    procs.append(member(cluster.bootstrap, topic, group, ledgers[1], *flags))
    summaries = finish_all(procs, 90)
    assert_exactly_once(read_ledgers(ledgers), ids)
    assert sum(int(str(s["processed"])) for s in summaries) == len(ids)
    keys = [(topic, p) for p in range(6)]
    assert committed_offsets(cluster.conf, group, [topic]) == end_offsets(cluster.conf, keys)


def test_a_member_left_without_partitions_exits_while_the_other_works(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    """More members than partitions (eager range): the member given nothing by a completed
    rebalance exits 0 with nothing processed (after two heartbeats) while the other still
    works; the other processes every record once and commits the end."""
    topic = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 80, sleep_ms=(150, 150))  # 12 s in one partition
    flags = ["--until-idle", "1", "--assignor", "range"]
    ledgers = [tmp_path / "a", tmp_path / "b"]
    procs = [member(cluster.bootstrap, topic, group, ledger, *flags) for ledger in ledgers]
    try:
        wait_for(lambda: any(p.poll() is not None for p in procs), 30, "a member exits")
    except AssertionError:
        finish_all(procs, 1)
        raise
    done_then = lines(ledgers[0]) + lines(ledgers[1])
    first_out = 0 if procs[0].poll() is not None else 1
    summaries = finish_all(procs, 60)
    assert summaries[first_out]["processed"] == 0, "the member that left had nothing"
    assert done_then < len(ids), "it left while the other still worked"
    assert summaries[1 - first_out]["processed"] == len(ids)
    assert_exactly_once(read_ledgers(ledgers), ids)
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): len(ids)}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_members_started_apart_both_exit_on_the_mock_cluster(
    mock_bootstrap: str, tmp_path: Path, protocol: str
) -> None:
    """The report on a broker that implements the protocols faithfully: classic
    cooperative-sticky, and KIP-848 (the broker assigns incrementally)."""
    topic, group = f"idle-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    ids = produce_jobs({"bootstrap.servers": mock_bootstrap}, topic, 2000, sleep_ms=(3, 9), keys=40)
    flags = ["--until-idle", "2"]
    if protocol == "consumer":  # no session flags: KIP-848 moves them to the broker
        flags = [*flags, "--group-protocol", "consumer"]
    ledgers = [tmp_path / "first", tmp_path / "second"]
    cmd = [*consume_cmd(mock_bootstrap, topic, group, "--handler", LEDGER_HANDLER,
                        "--on-failure", "stop", "--json"), *flags]  # fmt: skip
    if protocol == "consumer":
        cmd = [arg for arg in cmd if arg not in ("--session-timeout-ms", "6000",
                                                 "--heartbeat-ms", "1500")]  # fmt: skip
    procs = [spawn(cmd, ledgers[0])]
    try:
        wait_for(lambda: lines(ledgers[0]) >= 500, 60, "a quarter processed by the first")
    except AssertionError:
        finish_all(procs, 1)
        raise
    procs.append(spawn(cmd, ledgers[1]))
    summaries = finish_all(procs, 90)
    ledger = read_ledgers(ledgers)
    if protocol == "consumer":
        assert_exactly_once(ledger, ids)
    else:  # the mock refuses the revoke commit of partitions that move: those may run twice
        assert set(ledger) == set(ids)  # (docs/engine.md, the duplicate bounds)
    assert sum(int(str(s["processed"])) for s in summaries) == sum(ledger.values())
    committed, ends = (
        mock_committed(mock_bootstrap, group, topic),
        mock_ends(mock_bootstrap, topic),
    )
    assert committed == ends, "\n".join(str(s["log"]) for s in summaries)
