"""How the console's dead-letters page looks for dead-letter topics: in chunks, a chunk whose
look crashes the reader split until the topic that does is left out (pure logic: the reader's
calls are a stand-in that fails the way a crashed child does, with a ClusterError)."""

from __future__ import annotations

from typing import Any

from lagless.errors import ClusterError
from lagless.ui import records
from lagless.ui.model import Snapshot, TopicSample
from lagless.ui.records import PageReads, _chunks


def test_chunks_hold_up_to_the_limit_and_a_large_topic_alone() -> None:
    limit = records.LOOK_PARTITIONS
    sizes = [("a", 200), ("b", 200), ("c", 200), ("d", limit + 1), ("e", 1)]
    assert _chunks(sizes) == [["a", "b"], ["c"], ["d"], ["e"]]
    assert _chunks([]) == []


class Calls:
    """Answers looks like ``last_records``; a look that includes ``poison`` fails as a crashed
    reader does."""

    def __init__(self, dlqs: set[str], poison: str) -> None:
        self.dlqs, self.poison, self.looks = dlqs, poison, []  # type: ignore[var-annotated]

    def call(self, fn: Any, conf: Any, wanted: list[tuple[str, int, int]]) -> Any:
        names = {t for t, _, _ in wanted}
        self.looks.append(sorted(names))
        if self.poison in names:
            raise ClusterError("the console record reader process died (exit code -11)")
        return {t: 1000 + i for i, t in enumerate(sorted(names)) if t in self.dlqs}, set()


def test_a_topic_that_crashes_the_reader_is_left_out_and_the_others_are_read() -> None:
    topics = tuple(TopicSample(f"t{i:03d}", (3, 4)) for i in range(600))
    reads = PageReads({"bootstrap.servers": "unused:1"})
    calls = Calls({"t007", "t555"}, poison="t300")
    reads.calls = calls  # type: ignore[assignment]
    found = reads.dead_letter_topics(Snapshot(0.0, True, topics=topics))
    assert set(found) == {"t007", "t555"}
    assert ["t300"] in calls.looks  # narrowed down to the one topic
    looks = len(calls.looks)
    # known now: nothing is looked at again until a topic's end moves
    assert set(reads.dead_letter_topics(Snapshot(1.0, True, topics=topics))) == {"t007", "t555"}
    assert len(calls.looks) == looks
