"""The ablation: what each mitigation buys, one lever at a time.

The article compares the defaults with all mitigations at once. The lab's :data:`ABLATION`
chain adds one lever per scenario — cooperative-sticky, a short session, leaving on close,
surge 1 / unavailable 0 — and :data:`ALTERNATIVES` replace an instance in place or let the
broker assign (static membership, KIP-848, both), compared with ``mitigated``, the last step of
the chain. :func:`levers` names what differs between two scenarios; :func:`ablation_table`
lays the measured reports out in that order with, per :data:`MEASURES`, the value and the
factor against the step before (> 1: the step made it better).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lagless.lab.model import Measures, ScenarioReport
from lagless.lab.scenarios import ABLATION, ALTERNATIVES, SCENARIOS, Scenario

Figure = Callable[[ScenarioReport], float | None]


def _rebalance(r: ScenarioReport) -> float | None:
    return r.measures.rebalance_s.avg if r.measures else None


def _position_lag(r: ScenarioReport) -> float | None:
    m = r.measures
    return None if m is None or m.max_position_lag_records is None else m.max_position_lag_records


def _committed_lag(r: ScenarioReport) -> float | None:
    return None if r.measures is None else float(r.measures.max_lag_records)


def _e2e_rollout(r: ScenarioReport) -> float | None:
    last: Measures | None = r.last
    return None if last is None else last.e2e_rollout_ms.avg


# (key, label, unit, figure): smaller is better for each
MEASURES: tuple[tuple[str, str, str, Figure], ...] = (
    ("rebalance_avg_s", "average rebalance time", "s", _rebalance),
    ("max_position_lag_records", "max position lag", "records", _position_lag),
    ("max_lag_records", "max committed lag", "records", _committed_lag),
    ("e2e_rollout_avg_ms", "e2e average inside rollouts (last service)", "ms", _e2e_rollout),
)


def levers(before: Scenario, after: Scenario) -> list[str]:
    """What ``after`` changes against ``before``, one name per lever (session and heartbeat
    are one lever; surge and unavailable are one)."""
    out: list[str] = []
    if before.group_protocol != after.group_protocol:
        out.append(f"group.protocol={after.group_protocol}")
    if after.classic and before.assignor != after.assignor:
        out.append(after.assignor)
    if after.classic and (before.session_ms, before.heartbeat_ms) != (
        after.session_ms, after.heartbeat_ms
    ):  # fmt: skip
        out.append(
            f"session {after.session_ms / 1000:g} s / heartbeat {after.heartbeat_ms / 1000:g} s"
        )
    if before.leave_group != after.leave_group:
        out.append("leave on close" if after.leave_group else "exit without leaving")
    if before.static != after.static:
        out.append("static membership" if after.static else "dynamic membership")
    if (before.max_surge, before.max_unavailable) != (after.max_surge, after.max_unavailable):
        out.append(f"surge {after.max_surge} / unavailable {after.max_unavailable}")
    return out


@dataclass(frozen=True)
class Cell:
    value: float | None
    factor: float | None  # the step before / this one (> 1: better); None where undefined


@dataclass(frozen=True)
class AblationRow:
    scenario: str
    compared_with: str | None  # the step before (None for the baseline)
    adds: tuple[str, ...]  # the levers it adds to it
    cells: dict[str, Cell]

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "compared_with": self.compared_with,
            "adds": list(self.adds),
            **{k: {"value": c.value, "factor": c.factor} for k, c in self.cells.items()},
        }


def _factor(before: float | None, value: float | None) -> float | None:
    if before is None or value is None or value <= 0:
        return None
    return before / value


def ablation_table(reports: Sequence[ScenarioReport]) -> list[AblationRow]:
    """The measured reports in ablation order (chain, then alternatives; the others left out),
    each compared with the step before it in the chain (alternatives with ``mitigated``). A
    scenario that was not measured or failed is left out; the next one is compared with the
    last measured step of the chain."""
    measured = {r.scenario: r for r in reports if r.measures is not None and r.failed is None}
    rows: list[AblationRow] = []
    previous: ScenarioReport | None = None
    anchor: ScenarioReport | None = None  # the chain's last measured step
    for name in (*ABLATION, *ALTERNATIVES):
        report = measured.get(name)
        if report is None:
            continue
        before = previous if name in ABLATION else anchor
        cells = {
            key: Cell(figure(report), _factor(figure(before), figure(report)) if before else None)
            for key, _, _, figure in MEASURES
        }
        adds = levers(SCENARIOS[before.scenario], SCENARIOS[name]) if before else []
        rows.append(AblationRow(name, before.scenario if before else None, tuple(adds), cells))
        if name in ABLATION:
            previous = anchor = report
    return rows
