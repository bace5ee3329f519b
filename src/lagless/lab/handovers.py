"""Where a partition's unconsumed time goes when it changes owner: the handover breakdown.

A *handover* is two consecutive ownerships of one partition by different instances
(:func:`lagless.lab.ownership.ownerships`), both of which consumed, the first ending in the
measurement window. Its time unconsumed splits into three parts:

* ``draining_s``: the old owner's consumption end (its STOPPING, when it was stopping) to its
  release of the partition (REVOKED, LOST or STOPPED): it drains and commits;
* ``unowned_s``: the release to the new owner's ASSIGNED (0 when the new one was assigned first):
  the coordinator hands it over;
* ``first_record_s``: ASSIGNED to the new owner's first record (CONSUMING): its offset fetch and
  first fetch.

Handovers from a *stopping* owner (its consumption ended before its release, or it released
by stopping) and from a *running* one (a member that stays gives the partition up to a
rebalance) are counted apart: each kind is a :class:`HandoverStat` of averages and maxima.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

from lagless.lab.model import Handovers, HandoverStat, Ownership


def _stat(parts: Sequence[tuple[float, float, float]]) -> HandoverStat:
    if not parts:
        return HandoverStat()
    columns = list(zip(*parts, strict=True))

    def avg_max(values: Sequence[float]) -> tuple[float, float]:
        return (round(sum(values) / len(values), 3), round(max(values), 3))

    return HandoverStat(len(parts), avg_max(columns[0]), avg_max(columns[1]), avg_max(columns[2]))


def handovers(owned: Sequence[Ownership], start: float, end: float) -> Handovers:
    """The handovers whose old ownership ended in ``[start, end]`` (see the module doc)."""
    by_partition: dict[int, list[Ownership]] = defaultdict(list)
    for ownership in owned:
        by_partition[ownership.partition].append(ownership)
    stopping: list[tuple[float, float, float]] = []
    running: list[tuple[float, float, float]] = []
    for held in by_partition.values():
        held.sort(key=lambda o: o.start)
        for old, new in itertools.pairwise(held):
            if old.instance == new.instance or not start <= old.end <= end:
                continue
            if old.consuming_end is None or new.consuming is None:
                continue
            parts = (old.end - old.consuming_end, max(0.0, new.start - old.end),
                     new.consuming - new.start)  # fmt: skip
            was_stopping = old.ended_by == "stopped" or old.consuming_end < old.end
            (stopping if was_stopping else running).append(parts)
    return Handovers(_stat(stopping), _stat(running))
