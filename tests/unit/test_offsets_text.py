"""How a list of partitions is named in an error line: bounded, whatever its length."""

from __future__ import annotations

from lagless.kafka.offsets import partitions_text


def test_many_partitions_are_a_count_and_the_first_few() -> None:
    keys = [(f"h-{t}", p) for t in range(3) for p in range(200)]
    assert partitions_text(keys) == "600 partitions of 3 topics (h-0[0], h-0[1], h-0[2], ...)"
    assert partitions_text([("a", 0), ("a", 1)]) == "a[0], a[1]"
    assert len(partitions_text([("x" * 20, p) for p in range(10_000)])) < 120
