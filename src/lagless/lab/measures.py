"""The rebalance lab's figures, each defined once here (docs/rebalance-lab.md quotes this).

All times are this host's wall clock in seconds (latencies in ms); the input is one scenario's
:class:`lagless.lab.model.ScenarioData`.

**Ownership** (:func:`lagless.lab.ownership.ownerships`): per instance, ASSIGNED(parts) opens an
ownership of each partition at its stamp; the first CONSUMING of the partition after it sets
``consuming``; REVOKED / LOST close it; STOPPED closes what is still open (``stopped``); what is
open at the run's end ends there. Consumption of an ownership ends at the instance's STOPPING when
that comes first: its *consuming span* is ``[consuming, consuming_end)``.

**Measurement window**: from the start of the window named ``warm-up`` (else the run's start) to
the end of the window named ``cool-down`` (else the run's end). Windows named ``rollout…`` are the
rollouts.

``ownership_overlaps``
    Pairs of ownerships of one partition by two different instances whose ``[start, end)``
    intersect (anywhere in the run); ``overlap_s`` is the sum of those intersections.
``max_unconsumed_s``
    Per partition, the union of its consuming spans over all instances; the longest stretch of the
    measurement window a partition spent outside that union (a partition never consumed: the
    whole window).
``rebalances``
    Rounds of the group's callbacks whose first ASSIGNED lies in the window. ASSIGNED events of all
    instances (also those with no partitions) are taken by time; one starts a new round when it
    comes more than :data:`ROUND_GAP_S` after the first ASSIGNED of the current round. A REVOKED /
    LOST belongs to the round of the first ASSIGNED at or after it (an eager revoke and the
    assignment it leads to are one round); one with no ASSIGNED after it (the last member leaving)
    opens no round.
``rebalance_s``
    Per trigger (the lab starting or stopping an instance) whose ``t0`` lies in the window:
    ``t0`` = the instance's first SUBSCRIBED at or after the trigger for a START, its first
    STOPPING at or after the trigger for a STOP (else the trigger's stamp). Its horizon ``H`` is
    the next trigger's ``t0``, at most the window's end. Settled = the earliest ``t`` in
    ``[t0, H)`` at or after the last ASSIGNED / REVOKED / LOST in ``[t0, H)`` at which every
    partition is inside a consuming span. A trigger that does not settle before ``H`` settles
    with the next trigger (its disruption runs on); the last one unsettled settles at the window's
    end. Rebalance time = settled - t0; ``rebalance_s`` = avg and max over those triggers
    (None / None when there are none).
``max_lag_records``, ``max_lag_s``
    The maxima of the lag sampler's readings (:class:`lagless.lab.model.LagSample`) stamped in the
    window (0 when there are none): committed lag (log end - the group's committed offset, summed
    over the topic), and its age in seconds (None when the lab does not know the timestamps).
``max_position_lag_records``
    The maximum over the window of the sampler's position lag: per partition the owner's
    ``lagless_position_lag_records`` (log end - its consumer's position, set by the instance at
    every poll, as Kafka's ``records-lag``), a partition owned by nobody counted from its
    committed offset, summed over the topic (None when not read). This is what the rebalance
    article's "max lag" chart shows; committed lag also holds what was fetched and not yet
    committed (about rate x commit interval in a steady state).
``handovers``
    Where the unconsumed time of a partition changing owner goes
    (:mod:`lagless.lab.handovers`): per handover (two consecutive ownerships of a partition by
    different instances, both consuming, the first ending in the window), the old owner's
    draining (consumption end to release), the time owned by nobody (release to the new
    ASSIGNED) and the new owner's first record (ASSIGNED to CONSUMING); averaged and maxed
    apart for handovers from a stopping owner and from a running one.
``e2e_ms``
    End-to-end latency of a handler run = ``done_ms - ts_ms`` (record timestamp to handler done),
    over the runs with outcome ``ok`` or ``dlq`` finished in the window; p50 / p99 / max are exact
    nearest-rank percentiles (the value at rank ⌈q·n⌉ of the sorted latencies, no interpolation);
    ``avg`` the arithmetic mean.
    ``e2e_rollout_ms``: the same over runs finished inside a rollout window.
``lost``, ``duplicated``, ``processed``, ``produced``
    Over the whole run, records keyed by their id (``partition@offset`` when a record has none):
    ``produced`` = acknowledged records; ``processed`` = handler runs with outcome ``ok`` or
    ``dlq`` (``skipped`` is not a run); ``lost`` = produced ids never processed; ``duplicated`` =
    the sum over ids of (runs - 1).

Series for the page, x in seconds since the run's start: total lag in records and in seconds
(:func:`lag_series`), e2e p99 per 1-second bucket ``[k, k+1)`` of done time plotted at ``k``
(:func:`e2e_p99_series`, exact, None for a bucket without runs).

:func:`improvement` compares scenarios with a baseline: ratio = baseline / scenario for the
average rebalance time, max lag in records, max lag in seconds and e2e p99 (None where either
side is missing or the scenario's figure is 0).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lagless.lab.handovers import handovers
from lagless.lab.model import (
    EventKind,
    InstanceEvent,
    Measures,
    Ownership,
    Percentiles,
    Processed,
    ScenarioData,
    ScenarioReport,
    Stat,
    TriggerKind,
    Window,
)
from lagless.lab.ownership import (
    all_covered_from,
    coverage,
    longest_gap,
    overlaps,
    ownerships,
    sorted_events,
)

ROUND_GAP_S = 2.0
WARM_UP, COOL_DOWN, ROLLOUT = "warm-up", "cool-down", "rollout"
RUNS = ("ok", "dlq")
CALLBACKS = (EventKind.ASSIGNED, EventKind.REVOKED, EventKind.LOST)

Point = tuple[float, float | None]


@dataclass(frozen=True)
class Round:
    """One rebalance round: its ASSIGNED callbacks and the REVOKED / LOST leading into them."""

    start: float  # its first event (a revoke may come before the first ASSIGNED)
    assigned: float  # its first ASSIGNED
    end: float  # its last event
    events: tuple[InstanceEvent, ...]


@dataclass(frozen=True)
class Settle:
    """One trigger's rebalance: from ``t0`` until every partition is consumed again."""

    kind: TriggerKind
    instance: str
    t0: float
    settled: float

    @property
    def seconds(self) -> float:
        return self.settled - self.t0


@dataclass(frozen=True)
class Improvement:
    """Baseline / scenario ratios (> 1: the scenario is better); None where undefined."""

    scenario: str
    rebalance_avg: float | None
    max_lag_records: float | None
    max_lag_s: float | None
    e2e_p99: float | None

    def ratios(self) -> dict[str, float | None]:
        return {
            "rebalance_avg": self.rebalance_avg,
            "max_lag_records": self.max_lag_records,
            "max_lag_s": self.max_lag_s,
            "e2e_p99": self.e2e_p99,
        }


@dataclass(frozen=True)
class Improvements:
    baseline: str
    rows: tuple[Improvement, ...]

    @property
    def best(self) -> tuple[str, str, float] | None:
        """(scenario, figure, ratio) of the largest ratio, None when no ratio is defined."""
        found = [
            (ratio, row.scenario, name)
            for row in self.rows
            for name, ratio in row.ratios().items()
            if ratio is not None
        ]
        if not found:
            return None
        ratio, scenario, name = max(found, key=lambda f: f[0])
        return scenario, name, ratio


# -- windows --------------------------------------------------------------------------------


def measurement_window(data: ScenarioData) -> tuple[float, float]:
    start, end = data.run_start, data.run_end
    for window in data.windows:
        if window.name == WARM_UP:
            start = window.start
        elif window.name == COOL_DOWN:
            end = window.end
    return start, end


def rollouts(data: ScenarioData) -> list[Window]:
    return [w for w in data.windows if w.name.startswith(ROLLOUT)]


# -- rebalances -----------------------------------------------------------------------------


def rounds(events: Iterable[InstanceEvent]) -> list[Round]:
    """The rebalance rounds (see ``rebalances`` above), in order."""
    callbacks = [e for e in sorted_events(events) if e.kind in CALLBACKS]
    groups: list[list[InstanceEvent]] = []
    firsts: list[float] = []
    pending: list[InstanceEvent] = []  # revokes / losses waiting for their ASSIGNED
    for event in callbacks:
        if event.kind is not EventKind.ASSIGNED:
            pending.append(event)
            continue
        if not firsts or event.ts - firsts[-1] > ROUND_GAP_S:
            groups.append([])
            firsts.append(event.ts)
        groups[-1].extend(pending)
        groups[-1].append(event)
        pending = []
    return [
        Round(min(e.ts for e in g), first, max(e.ts for e in g), tuple(g))
        for g, first in zip(groups, firsts, strict=True)
    ]


def _t0(data: ScenarioData, kind: TriggerKind, instance: str, ts: float) -> float:
    wanted = EventKind.SUBSCRIBED if kind is TriggerKind.START else EventKind.STOPPING
    mine = (e for e in data.events if e.instance == instance and e.kind is wanted)
    return min((e.ts for e in mine if e.ts >= ts), default=ts)


def settles(data: ScenarioData, owned: Sequence[Ownership] | None = None) -> list[Settle]:
    """Each trigger in the window with its settle time (see ``rebalance_s`` above)."""
    start, end = measurement_window(data)
    owned = ownerships(data.events, data.run_end) if owned is None else owned
    cover = coverage(owned, data.partitions)
    callbacks = sorted(e.ts for e in data.events if e.kind in CALLBACKS)
    triggers = sorted(
        ((_t0(data, t.kind, t.instance, t.ts), t) for t in data.triggers), key=lambda x: x[0]
    )
    local: list[float | None] = []
    for i, (t0, _) in enumerate(triggers):
        horizon = min(next((t for t, _ in triggers[i + 1 :] if t > t0), end), end)
        last = max((ts for ts in callbacks if t0 <= ts < horizon), default=t0)
        local.append(all_covered_from(cover, max(t0, last), horizon))
    settled: list[float] = []
    carry = end
    for found in reversed(local):
        carry = found if found is not None else carry
        settled.append(carry)
    settled.reverse()
    return [
        Settle(t.kind, t.instance, t0, max(done, t0))
        for (t0, t), done in zip(triggers, settled, strict=True)
        if start <= t0 <= end
    ]


# -- latency and ledger ---------------------------------------------------------------------


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The exact nearest-rank ``q`` quantile (0 < q <= 1) of sorted, non-empty values."""
    rank = max(1, math.ceil(q * len(ordered) - 1e-9))
    return ordered[rank - 1]


def percentiles(values: Iterable[float]) -> Percentiles:
    ordered = sorted(values)
    if not ordered:
        return Percentiles()
    return Percentiles(
        nearest_rank(ordered, 0.50), nearest_rank(ordered, 0.99), ordered[-1],
        sum(ordered) / len(ordered),
    )  # fmt: skip


def runs(processed: Iterable[Processed]) -> list[Processed]:
    """The handler runs (outcome ok or dlq; skipped records did not run)."""
    return [p for p in processed if p.outcome in RUNS]


def e2e_ms(record: Processed) -> float:
    return record.done_ms - record.ts_ms


def _done_in(records: Iterable[Processed], windows: Sequence[tuple[float, float]]) -> list[float]:
    return [e2e_ms(r) for r in records if any(a <= r.done_ms / 1000 <= b for a, b in windows)]


def _key(id_: str, partition: int, offset: int) -> str:
    return id_ or f"{partition}@{offset}"


def ledger(data: ScenarioData) -> tuple[int, int]:
    """(lost, duplicated) over the whole run (see above)."""
    counts = Counter(_key(r.id, r.partition, r.offset) for r in runs(data.processed))
    produced = {_key(p.id, p.partition, p.offset) for p in data.produced}
    lost = sum(1 for key in produced if counts[key] == 0)
    duplicated = sum(n - 1 for n in counts.values())
    return lost, duplicated


# -- the figures ----------------------------------------------------------------------------


def measure(data: ScenarioData) -> Measures:
    """One scenario's :class:`Measures` (each figure defined in this module's docstring)."""
    start, end = measurement_window(data)
    owned = ownerships(data.events, data.run_end)
    found = overlaps(owned)
    cover = coverage(owned, data.partitions)
    unconsumed = max((longest_gap(s, start, end) for s in cover.values()), default=0.0)
    times = [s.seconds for s in settles(data, owned)]
    lag = [s for s in data.lag if start <= s.ts <= end]
    done = runs(data.processed)
    lost, duplicated = ledger(data)
    return Measures(
        rebalances=sum(1 for r in rounds(data.events) if start <= r.assigned <= end),
        rebalance_s=Stat(sum(times) / len(times), max(times)) if times else Stat(),
        max_unconsumed_s=unconsumed,
        max_lag_records=max((s.lag_records for s in lag), default=0),
        max_lag_s=_max_or_none([s.lag_s for s in lag], 0.0),
        e2e_ms=percentiles(_done_in(done, [(start, end)])),
        e2e_rollout_ms=percentiles(_done_in(done, [(w.start, w.end) for w in rollouts(data)])),
        lost=lost,
        duplicated=duplicated,
        ownership_overlaps=len(found),
        overlap_s=sum(o.seconds for o in found),
        processed=len(done),
        produced=len(data.produced),
        max_position_lag_records=_max_or_none([s.position_lag_records for s in lag], None),
        handovers=handovers(owned, start, end),
    )


def _max_or_none(values: Sequence[Any], empty: Any) -> Any:
    """The largest of the values that are not None; ``empty`` when there are no values; None
    when every value is None."""
    if not values:
        return empty
    known = [v for v in values if v is not None]
    return max(known) if known else None


# -- series for the page --------------------------------------------------------------------


def lag_series(data: ScenarioData) -> tuple[list[Point], list[Point]]:
    """(total lag in records, lag in seconds) over time, x in seconds since the run's start."""
    ordered = sorted(data.lag, key=lambda s: s.ts)
    records: list[Point] = [(s.ts - data.run_start, float(s.lag_records)) for s in ordered]
    seconds: list[Point] = [(s.ts - data.run_start, s.lag_s) for s in ordered]
    return records, seconds


def e2e_p99_series(data: ScenarioData) -> list[Point]:
    """Exact e2e p99 (ms) per 1-second bucket of done time since the run's start."""
    buckets: dict[int, list[float]] = {}
    for r in runs(data.processed):
        k = math.floor(r.done_ms / 1000 - data.run_start)
        buckets.setdefault(k, []).append(e2e_ms(r))
    if not buckets:
        return []
    out: list[Point] = []
    for k in range(min(buckets), max(buckets) + 1):
        values = sorted(buckets.get(k, ()))
        out.append((float(k), nearest_rank(values, 0.99) if values else None))
    return out


# -- comparison -----------------------------------------------------------------------------


def _ratio(base: float | None, value: float | None) -> float | None:
    if base is None or value is None or value <= 0:
        return None
    return base / value


def improvement(
    reports: Sequence[ScenarioReport], baseline: str = "eager-defaults"
) -> Improvements:
    """Baseline / scenario ratios for every other measured scenario (none without the baseline)."""
    base = next((r.measures for r in reports if r.scenario == baseline), None)
    if base is None:
        return Improvements(baseline, ())
    rows = tuple(
        Improvement(
            r.scenario,
            _ratio(base.rebalance_s.avg, m.rebalance_s.avg),
            _ratio(base.max_lag_records, m.max_lag_records),
            _ratio(base.max_lag_s, m.max_lag_s),
            _ratio(base.e2e_ms.p99, m.e2e_ms.p99),
        )
        for r in reports
        if r.scenario != baseline and (m := r.measures) is not None
    )
    return Improvements(baseline, rows)
