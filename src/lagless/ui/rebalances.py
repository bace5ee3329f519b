"""Rebalances as the sampler sees them: changes of a group's assignment between cycles.

One rebalance (the figure of :mod:`lagless.observe.figures`) is counted once per group: it opens
at the first cycle whose assignment differs from the previous one, or whose state is a
rebalancing state (``PreparingRebalance``, ``CompletingRebalance``); it closes at the first cycle
where the assignment held since the previous cycle, the state is not rebalancing and every
partition of the group is owned (or no member is left). Its duration (rebalance time, to the
sampler's resolution) runs from the opening cycle to the closing one; ``moved`` counts the
partitions whose owners differ between before and after. Pure logic, fed one sample at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from lagless.ui.model import GroupSample, Rebalance

REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance"})
Assignment = frozenset[tuple[str, str, int]]


def moved(before: Assignment, after: Assignment) -> int:
    """Partitions whose set of owners differs between two assignments."""

    def owners(a: Assignment) -> dict[tuple[str, int], set[str]]:
        out: dict[tuple[str, int], set[str]] = {}
        for owner, topic, partition in a:
            out.setdefault((topic, partition), set()).add(owner)
        return out

    b, c = owners(before), owners(after)
    return sum(1 for key in set(b) | set(c) if b.get(key) != c.get(key))


@dataclass
class _Group:
    assignment: Assignment
    before: Assignment
    open: Rebalance | None = None
    total: int = 0


class RebalanceTracker:
    """Per group: the last assignment, the rebalance in progress, the ones done."""

    def __init__(self, keep: int = 1000) -> None:
        self._groups: dict[str, _Group] = {}
        self.done: list[Rebalance] = []
        self._keep = keep

    def total(self, group: str) -> int:
        """Rebalances seen for ``group`` since the sampler started."""
        state = self._groups.get(group)
        return state.total if state else 0

    def current(self, group: str) -> Rebalance | None:
        state = self._groups.get(group)
        return state.open if state else None

    def observe(self, sample: GroupSample, t: float) -> Rebalance | None:
        """Feed one cycle's sample; returns a rebalance that closed at it, if any."""
        now = sample.assignment()
        state = self._groups.get(sample.group)
        if state is None:  # first sight: the assignment as found is no event
            self._groups[sample.group] = _Group(now, now)
            return None
        changed = now != state.assignment
        rebalancing = sample.state in REBALANCING
        if state.open is None and (changed or rebalancing):
            state.open = Rebalance(sample.group, t, None, 0)
            state.before = state.assignment
            state.total += 1
        state.assignment = now
        if state.open is None or changed or rebalancing:
            return None
        owned = {(topic, partition) for _, topic, partition in now}
        every = all(p.key in owned for p in sample.partitions)
        if not every and now:
            return None
        closed = replace(
            state.open, duration_s=round(t - state.open.at, 3), moved=moved(state.before, now)
        )
        state.open = None
        self.done.append(closed)
        del self.done[: -self._keep]
        return closed

    def forget(self, groups: Iterable[str]) -> None:
        """Keep the state of these groups only (a deleted group disappears)."""
        keep = set(groups)
        for group in [g for g in self._groups if g not in keep]:
            del self._groups[group]
