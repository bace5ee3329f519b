"""Commits the broker refuses, injected at chosen moments on a mock cluster in the test process
(``engine_helpers/faults.py``): the run never ends "done" with what ran uncommitted, a last
commit refused as fenced is committed once the member rejoins, and offset maps a broker finds
too large are dropped (commits go on)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError

from tests.conftest import wait_for
from tests.integration.engine_helpers.faults import OFFSET_COMMIT, FaultyMock
from tests.integration.engine_helpers.group import Group
from tests.integration.engine_helpers.mock import lines, mock_committed

pytestmark = pytest.mark.integration


def test_until_idle_fails_when_the_broker_refuses_every_commit(
    faulty_mock: FaultyMock, faulty_group: Group
) -> None:
    """Every record runs, every commit is refused: exit 1 naming the refusal, not exit 0."""
    mock, members = faulty_mock, faulty_group
    ids = members.produce(4, "w")
    members.start("a")
    wait_for(lambda: members.assigned("a"), 30, "a assigned")
    mock.refuse(OFFSET_COMMIT, *[KafkaError.REQUEST_TIMED_OUT] * 10_000)
    ids += members.produce(300, "r")
    out = members.finish("a", 90, expect=1)
    summary = json.loads(out.strip().splitlines()[-1])
    assert "the broker has refused this member's commits" in summary["error"], summary
    assert "REQUEST_TIMED_OUT" in summary["error"], summary
    assert summary["commits"] == 0, summary
    assert set(ids) <= set((members.tmp / "a.ids").read_text().split())
    assert "not committed (at shutdown)" in members.logs["a"], members.logs["a"][-3000:]


def test_a_commit_refused_once_past_the_bound_is_sent_again_before_giving_up(
    faulty_mock: FaultyMock, faulty_group: Group
) -> None:
    """Every record ran; the next commit (a 20 s interval: longer than the rejoin bound) is
    refused a few times: sent again at once before the member would give up, it lands: exit
    0, committed at the ends."""
    mock, members = faulty_mock, faulty_group
    ids = members.produce(4, "w")
    members.start("a", "--commit-interval", "20")
    wait_for(lambda: members.assigned("a"), 30, "a assigned")
    ids += members.produce(300, "r")
    wait_for(lambda: lines(members.tmp / "a.ids") >= len(ids), 30, "every record ran")
    mock.refuse(OFFSET_COMMIT, *[KafkaError.REQUEST_TIMED_OUT] * 4)
    members.finish("a", 90)
    members.exactly_once(ids)
    members.check_done(ids)


@pytest.mark.parametrize("refusals", [1, 2])
def test_a_last_commit_refused_as_fenced_is_committed_after_the_member_rejoins(
    faulty_mock: FaultyMock, faulty_group: Group, refusals: int
) -> None:
    """The only commit is the last one (SIGTERM); refused with ILLEGAL_GENERATION, librdkafka
    reports the partitions lost: what finished is carried, logged with its offsets, and
    committed once the member rejoins and owns them again (refused again there, sent again
    before the member closes). Every record once."""
    mock, members = faulty_mock, faulty_group
    ids = members.produce(4, "w")
    members.start("a", "--commit-interval", "600", "--commit-every", "1000000")
    wait_for(lambda: members.assigned("a"), 30, "a assigned")
    ids += members.produce(1000, "r")
    wait_for(lambda: lines(members.tmp / "a.ids") >= 300, 30, "a works")
    mock.refuse(OFFSET_COMMIT, *[KafkaError.ILLEGAL_GENERATION] * refusals)
    members.stop("a", 60)
    log = members.logs["a"]
    assert "without commit (session ended or member fenced); finished, not committed" in log, log
    assert "not committed (at shutdown)" not in log, log[-3000:]
    ran = (members.tmp / "a.ids").read_text().split()
    assert len(ran) == len(set(ran)) and set(ran) <= set(ids)
    committed = mock_committed(members.bootstrap, members.group, members.topic)
    assert sum(committed.values()) == len(ran), (committed, len(ran))


def test_offset_maps_a_broker_finds_too_large_are_dropped(
    faulty_mock: FaultyMock, faulty_group: Group
) -> None:
    """A commit refused with OFFSET_METADATA_TOO_LARGE: said once, commits go on without
    offset maps, the run ends committed at the partitions' ends."""
    mock, members = faulty_mock, faulty_group
    ids = members.produce(4, "w")
    members.start("a")
    wait_for(lambda: members.assigned("a"), 30, "a assigned")
    mock.refuse(OFFSET_COMMIT, KafkaError.OFFSET_METADATA_TOO_LARGE)
    ids += members.produce(1000, "r")
    members.finish("a", 60)
    assert members.logs["a"].count("refuses offset maps this large") == 1, members.logs["a"]
    members.exactly_once(ids)
    members.check_done(ids)
