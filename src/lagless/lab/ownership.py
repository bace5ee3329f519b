"""Who owned which partition when: ownership intervals, overlaps and consuming coverage.

Pure functions over the instances' events (:class:`lagless.lab.model.InstanceEvent`); the
definitions are quoted in :mod:`lagless.lab.measures`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from lagless.lab.model import EventKind, InstanceEvent, Ownership

Span = tuple[float, float]


@dataclass(frozen=True)
class Overlap:
    """Two instances owning one partition at once (a correct coordinator never does this)."""

    partition: int
    first: str
    second: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def sorted_events(events: Iterable[InstanceEvent]) -> list[InstanceEvent]:
    """Events by time; events with the same stamp keep their recorded order."""
    return sorted(events, key=lambda event: event.ts)


class _Instance:
    """One instance's open ownerships while its events are replayed."""

    def __init__(self) -> None:
        self.open: dict[int, Ownership] = {}
        self.stopping: float | None = None  # since its STOPPING (reset when it subscribes again)

    def close(self, partition: int, ts: float, ended_by: str) -> Ownership:
        held = self.open.pop(partition)
        end = max(ts, held.start)
        cap = end if self.stopping is None else min(end, max(self.stopping, held.start))
        consuming_end = None if held.consuming is None else max(cap, held.consuming)
        return replace(held, end=end, ended_by=ended_by, consuming_end=consuming_end)


def ownerships(events: Iterable[InstanceEvent], run_end: float) -> list[Ownership]:
    """Every instance's hold on every partition, in order of start (then partition, instance).

    Per instance: ASSIGNED(parts) opens an ownership of each listed partition it does not already
    hold; the first CONSUMING that lists the partition after that (a CONSUMING without partitions
    applies to all its open ones) sets ``consuming``, unless the instance is already stopping;
    REVOKED / LOST close the listed ones (``ended_by`` revoked / lost); STOPPED closes all it still
    holds (``stopped``); what is open at ``run_end`` ends there (``end``). Consumption ends at the
    instance's STOPPING when that comes before the end (``consuming_end``).
    """
    state: dict[str, _Instance] = defaultdict(_Instance)
    done: list[Ownership] = []
    for event in sorted_events(events):
        inst = state[event.instance]
        kind = event.kind
        if kind is EventKind.SUBSCRIBED:
            inst.stopping = None
        elif kind is EventKind.ASSIGNED:
            for p in event.partitions:
                if p not in inst.open:
                    inst.open[p] = Ownership(p, event.instance, event.ts, event.ts)
        elif kind is EventKind.CONSUMING and inst.stopping is None:
            for p in event.partitions or tuple(inst.open):
                held = inst.open.get(p)
                if held is not None and held.consuming is None:
                    inst.open[p] = replace(held, consuming=event.ts)
        elif kind in (EventKind.REVOKED, EventKind.LOST):
            for p in event.partitions:
                if p in inst.open:
                    done.append(inst.close(p, event.ts, str(kind)))
        elif kind is EventKind.STOPPING:
            if inst.stopping is None:
                inst.stopping = event.ts
        elif kind is EventKind.STOPPED:
            done.extend(inst.close(p, event.ts, "stopped") for p in list(inst.open))
    for inst in state.values():
        done.extend(inst.close(p, max(run_end, inst.open[p].start), "end") for p in list(inst.open))
    return sorted(done, key=lambda o: (o.start, o.partition, o.instance))


def overlaps(owned: Sequence[Ownership]) -> list[Overlap]:
    """Pairs of ownerships of one partition by different instances whose [start, end) intersect."""
    by_partition: dict[int, list[Ownership]] = defaultdict(list)
    for o in owned:
        by_partition[o.partition].append(o)
    out: list[Overlap] = []
    for partition in sorted(by_partition):
        held = sorted(by_partition[partition], key=lambda o: o.start)
        for i, a in enumerate(held):
            for b in held[i + 1 :]:
                if b.start >= a.end:
                    break
                start, end = b.start, min(a.end, b.end)
                if a.instance != b.instance and end > start:
                    out.append(Overlap(partition, a.instance, b.instance, start, end))
    return out


def merge(spans: Iterable[Span]) -> list[Span]:
    """The union of half-open spans, as disjoint spans in order (empty spans dropped)."""
    out: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def coverage(owned: Sequence[Ownership], partitions: int) -> dict[int, list[Span]]:
    """Per partition 0..partitions-1: the union of its consuming spans over all instances."""
    spans: dict[int, list[Span]] = {p: [] for p in range(partitions)}
    for o in owned:
        span = o.consuming_span
        if span is not None and o.partition in spans:
            spans[o.partition].append(span)
    return {p: merge(s) for p, s in spans.items()}


def longest_gap(spans: Sequence[Span], start: float, end: float) -> float:
    """The longest stretch of [start, end] outside the (merged, ordered) ``spans``."""
    longest, cursor = 0.0, start
    for a, b in spans:
        if b <= cursor:
            continue
        if a >= end:
            break
        longest = max(longest, a - cursor)
        cursor = max(cursor, b)
    return max(longest, end - cursor, 0.0)


def next_covered(spans: Sequence[Span], t: float) -> float | None:
    """The earliest time >= t inside the merged ``spans`` (None if there is none)."""
    for a, b in spans:
        if b > t:
            return max(a, t)
    return None


def all_covered_from(cover: dict[int, list[Span]], t: float, limit: float) -> float | None:
    """The earliest time in [t, limit) at which every partition is inside its coverage."""
    while t < limit:
        nexts = [next_covered(spans, t) for spans in cover.values()]
        if any(n is None for n in nexts):
            return None
        latest = max((n for n in nexts if n is not None), default=t)
        if latest == t:
            return t
        t = latest
    return None
