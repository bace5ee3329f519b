"""Planned eager rebalances (``--assignor range``) on librdkafka's mock cluster: what is re-run.

The mock refuses every commit from the moment a member joins or leaves until the group has
synced again (Apache Kafka accepts an eager member's commits while the group prepares), and an
eager member hears of the rebalance only at its next heartbeat: its revoke commit is refused.
The engine carries that commit into its next generation (see ``lagless.engine.offsets.carry``).
Here: a member leaving cleanly re-runs nothing; a member joining re-runs only, on the
partitions that moved, records below the offset the first member logs as not committed; a
member stopped while the group rebalances commits in its next generation, so a later member
re-runs nothing."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.conftest import wait_for
from tests.integration import engine_helpers as helpers
from tests.integration.engine_helpers.faults import OFFSET_COMMIT, FaultyMock
from tests.integration.engine_helpers.group import Group
from tests.integration.engine_helpers.mock import lines

pytestmark = pytest.mark.integration

CARRIED = "committed after the rebalance what could not be before it"
NOT_COMMITTED = re.compile(r"\[(\d+)\] offset (\d+) \(")


@pytest.fixture
def eager(mock_bootstrap: str, tmp_path: Path) -> Iterator[Group]:
    group = Group(mock_bootstrap, tmp_path)
    yield group
    group.kill_all()


def started_together(group: Group) -> list[str]:
    """Members a and b, both assigned, then the records: none ran before both were. On a
    loaded machine one may join (or sync) too late for the first rebalance delay: the group
    forms in more generations, and the four warm-up records that ran in an earlier one may
    run once more where their partition moved with its revoke commit refused (the documented
    bound): they are ``repeatable`` then; the 3,000 records still run once."""
    warm = group.produce(4, "w")  # the topic exists before the members check it
    group.start("a")
    group.start("b")
    wait_for(lambda: group.assigned("a") and group.assigned("b"), 30, "both assigned")
    group.formed = {name: group.revokes(name) for name in group.procs}
    if any(group.formed.values()):
        group.repeatable = set(warm)
    return [*warm, *group.produce(3000, "r")]


def one_generation(group: Group) -> None:
    """Skip, with the reason, if the group rebalanced after it had formed (a member's session
    lapsed on a loaded machine): not the one-generation case these tests are about."""
    revoked = {name: group.revokes(name) for name in group.procs}
    if revoked != group.formed:
        pytest.skip(f"the group rebalanced after the records came (revokes {revoked}, "
                    f"{group.formed} when it had formed)")  # fmt: skip


def test_a_member_leaving_cleanly_re_runs_nothing(eager: Group) -> None:
    """b stops (SIGTERM: drains, commits, leaves); a's revoke commit is refused (the group
    rebalances), carried, and committed when a owns its partitions again: every record once."""
    ids = started_together(eager)
    wait_for(lambda: lines(eager.tmp / "b.ids") >= 300, 30, "b works")
    one_generation(eager)
    eager.stop("b")
    eager.finish("a", 35)
    eager.exactly_once(ids)
    assert CARRIED in eager.logs["a"], eager.logs["a"][-3000:]
    eager.check_done(ids)


def test_a_member_joining_re_runs_only_what_moved_uncommitted(eager: Group) -> None:
    """b joins while a works: a's revoke commit is refused. The partitions a keeps re-run
    nothing (committed in the next generation); on those that moved to b, only records below
    the offset a logs as not committed run twice."""
    ids = eager.produce(3000, "r")
    eager.start("a")
    wait_for(lambda: lines(eager.tmp / "a.ids") >= 600, 30, "a works")
    eager.start("b")
    # Records keep coming until b is assigned: on a loaded machine b takes seconds to start,
    # and a, idle by then, would have nothing left to commit when b joins.
    deadline = time.monotonic() + 60
    while not eager.assigned("b"):
        assert time.monotonic() < deadline, "b not assigned within 60 s"
        ids += eager.produce(50, f"m{len(ids)}-")
        time.sleep(0.1)
    eager.finish("a", 35)
    eager.finish("b", 10)
    limits: dict[int, int] = {}  # partition -> highest offset a member logged not committed
    for log in eager.logs.values():
        for line in log.splitlines():
            if "not committed" in line:
                for p, o in NOT_COMMITTED.findall(line):
                    limits[int(p)] = max(limits.get(int(p), 0), int(o))
    runs = Counter((line.partition, line.offset) for line in eager.ledger())
    twice = sorted(key for key, n in runs.items() if n > 1)
    # A record runs once more for each time its partition moved before a commit covered it:
    # twice at most when b's join took one rebalance; a loaded machine can take more rounds.
    rebalances = max(eager.revokes("a"), eager.revokes("b"), 1)
    assert max(runs.values()) <= 1 + rebalances, f"{rebalances} rebalances"
    beyond = [(p, o) for p, o in twice if o >= limits.get(p, 0)]
    assert not beyond, f"re-run beyond what was logged not committed {limits}: {beyond[:5]}"
    assert CARRIED in eager.logs["a"], eager.logs["a"][-3000:]
    eager.check_done(ids)


def test_a_member_stopped_during_a_rebalance_commits_in_its_next_generation(
    eager: Group,
) -> None:
    """b leaves and a is stopped at once, while the group rebalances: a's last commit is
    refused, sent again once a rejoined (its partitions back), before a closes. c then runs
    what is left: every record once."""
    ids = started_together(eager)
    wait_for(lambda: lines(eager.tmp / "a.ids") >= 300, 30, "a works")
    one_generation(eager)
    eager.stop("b")
    eager.stop("a")
    assert "not committed (at shutdown)" not in eager.logs["a"], eager.logs["a"][-3000:]
    eager.start("c")
    eager.finish("c", 30)
    eager.exactly_once(ids)
    eager.check_done(ids)


def test_a_carried_commit_refused_again_re_runs_nothing_where_the_member_stays(
    faulty_mock: FaultyMock, faulty_group: Group
) -> None:
    """b works alone; x joins the group for another topic (b keeps every partition of its
    own): b's revoke commit is refused (the mock, while x joins) and carried, and its commit
    in the next generation is refused too (injected). b starts after the records it ran
    anyway, and commits them next: every record once."""
    group = faulty_group
    other = f"other-{uuid.uuid4().hex[:8]}"
    helpers.produce_jobs({"bootstrap.servers": faulty_mock.bootstrap}, other, 1)
    ids = group.produce(4, "w")
    group.start("b")
    wait_for(lambda: group.assigned("b"), 30, "b assigned")
    ids += group.produce(3000, "r")
    wait_for(lambda: lines(group.tmp / "b.ids") >= 300, 30, "b works")
    x = Consumer({"bootstrap.servers": faulty_mock.bootstrap, "group.id": group.group,
                  "partition.assignment.strategy": "range", "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 1500})  # fmt: skip
    x.subscribe([other])
    try:
        wait_for(lambda: x.poll(0.05) is None and group.revokes("b") > 0, 30, "b revoked")
        faulty_mock.refuse(OFFSET_COMMIT, KafkaError.REBALANCE_IN_PROGRESS)
        wait_for(lambda: x.poll(0.05) is None and bool(x.assignment()), 30, "x assigned")
        assert lines(group.tmp / "b.ids") < len(ids), "b ran every record before x came"
    finally:
        x.close()
    group.finish("b", 60)
    group.exactly_once(ids)
    assert "commit refused again after the rebalance" in group.logs["b"], group.logs["b"][-3000:]
    group.check_done(ids)


@pytest.mark.parametrize(
    ("protocol", "assignor"),
    [("classic", "range"), ("classic", "cooperative-sticky"), ("consumer", None)],
)
def test_an_assignment_made_in_the_callback_is_the_one_used(
    faulty_mock: FaultyMock, protocol: str, assignor: str | None
) -> None:
    """What the engine relies on to start after a carried commit refused again: offsets
    assigned inside ``on_assign`` are used, and librdkafka does not assign again."""
    producer = Producer({"bootstrap.servers": faulty_mock.bootstrap})
    for i in range(40):
        producer.produce("t", b"%d" % i, partition=i % 4)
    producer.flush(10)
    conf = {"bootstrap.servers": faulty_mock.bootstrap, "group.id": "g", "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}  # fmt: skip
    if assignor is not None:
        conf["partition.assignment.strategy"] = assignor

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        at = [TopicPartition(tp.topic, tp.partition, 5 if tp.partition == 0 else tp.offset)
              for tp in partitions]  # fmt: skip
        (consumer.assign if assignor == "range" else consumer.incremental_assign)(at)

    consumer = Consumer(conf)
    consumer.subscribe(["t"], on_assign=on_assign)
    offsets: dict[int, list[int]] = {}
    try:
        wait_for(lambda: _take_one(consumer, offsets) >= 35, 30, "35 records")
    finally:
        consumer.close()
    assert {p: (min(o), len(o)) for p, o in offsets.items()} == {
        0: (5, 5),
        1: (0, 10),
        2: (0, 10),
        3: (0, 10),
    }


def _take_one(consumer: Consumer, offsets: dict[int, list[int]]) -> int:
    """Poll once; the records taken so far (their offsets by partition in ``offsets``)."""
    msg = consumer.poll(0.2)
    if msg is not None and msg.error() is None:
        offsets.setdefault(msg.partition() or 0, []).append(msg.offset() or 0)
    return sum(len(o) for o in offsets.values())
