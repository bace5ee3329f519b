"""The offset map in commit metadata: round trip, the 4 KB bound, gaps, garbage."""

from __future__ import annotations

import random

import pytest

from lagless.engine.offsets import offset_map
from lagless.engine.offsets.offset_map import LIMIT, decode, encode


def test_round_trip_with_gaps() -> None:
    done = {12, 13, 14, 20, 22, 23, 100, 5000}
    text = encode(10, done)
    assert text.startswith(offset_map.PREFIX)
    assert decode(text) == (10, frozenset(done))


def test_offsets_at_or_below_base_are_ignored() -> None:
    assert decode(encode(10, {5, 10, 11})) == (10, frozenset({11}))


def test_nothing_completed_is_empty_metadata() -> None:
    assert encode(7, []) == ""
    assert encode(7, [3, 7]) == ""
    assert decode("") is None


def test_dense_window_prefers_bitmap_and_sparse_prefers_runs() -> None:
    alternating = set(range(1001, 3000, 2))  # every other offset: runs are long, a bitmap short
    dense = encode(1000, alternating)
    assert decode(dense) == (1000, frozenset(alternating))
    assert len(dense) < 400
    sparse = {10**6, 2 * 10**6}  # far apart: a bitmap would be huge, runs are a few bytes
    text = encode(0, sparse)
    assert len(text) < 40
    assert decode(text) == (0, frozenset(sparse))


def test_never_exceeds_the_limit_and_keeps_a_prefix_of_the_offsets() -> None:
    rng = random.Random(7)
    base = 10**9
    done = sorted({base + 1 + rng.randrange(200_000) * 3 for _ in range(20_000)})
    text = encode(base, done)
    assert 0 < len(text) <= LIMIT
    decoded = decode(text)
    assert decoded is not None
    got_base, kept = decoded
    assert got_base == base
    assert kept, "some offsets must survive"
    assert kept < set(done), "the tail is dropped, nothing invented"
    assert sorted(kept) == done[: len(kept)], "what is kept is the head, never a hole"


@pytest.mark.parametrize("limit", [16, 64, 300])
def test_small_limits_degrade_to_fewer_offsets(limit: int) -> None:
    done = list(range(2, 5000, 2))
    text = encode(0, done, limit=limit)
    assert len(text) <= limit
    decoded = decode(text)
    if text:
        assert decoded is not None
        assert sorted(decoded[1]) == done[: len(decoded[1])]


def test_garbage_decodes_to_none() -> None:
    for text in ("hello", "lgl1:!!!", "lgl1:", "lgl1:gA==", "lgl1:" + "A" * 8, None):
        assert decode(text) is None


def test_negative_base_is_rejected() -> None:
    with pytest.raises(ValueError):
        encode(-1, [1])
