"""Build deploy/grafana/lagless.json from code with grafana-foundation-sdk (``lagless[dev]``).

    python deploy/grafana/build_dashboard.py          # writes deploy/grafana/lagless.json
    python deploy/grafana/build_dashboard.py --check  # exit 1 if the committed file differs

Every panel is per consumer group (the ``group`` variable). Figures as docs/observability.md
defines them: lag in seconds from the console's sampler where it runs, else the engines' gauge
(the same definition, reduced to the group before ``or``: never counted twice); committed lag
(console) and unfinished lag (engines) are different figures and keep their names in the
legend; rebalances are group events (the console's count, else the assign callbacks of the
member that saw the most); the engines' callback histogram is "rebalance callback time".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple

from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

OUT = Path(__file__).with_name("lagless.json")
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
G = '{group=~"$group"}'
W = "$__rate_interval"
ASSIGN = '{kind="assign",group=~"$group"}'


class Query(NamedTuple):
    """A PromQL expression and its legend."""

    expr: str
    legend: str


class PanelSpec(NamedTuple):
    """A time series panel: its title, unit, description and queries."""

    title: str
    unit: str
    description: str
    queries: tuple[Query, ...]


def lag_by(figure: str, console: str, engine: str, by: str = "group") -> str:
    """``figure`` of the console's series where it runs, else the engines' (same definition)."""
    return f"{figure} by ({by}) ({console}{G}) or {figure} by ({by}) ({engine}{G})"


def tagged(expr: str, name: str) -> str:
    """``expr`` with a ``lag="name"`` label: two different figures shown side by side."""
    return f'label_replace({expr}, "lag", "{name}", "", "")'


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("End-to-end latency (avg, p99)", "s",
              "Record timestamp to handler done, from the engines' histogram.", (
        Query(f"sum by (group) (rate(lagless_e2e_latency_seconds_sum{G}[{W}])) / "
              f"sum by (group) (rate(lagless_e2e_latency_seconds_count{G}[{W}]))", "{{group}} avg"),
        Query(f"histogram_quantile(0.99, sum by (group, le) "
              f"(rate(lagless_e2e_latency_seconds_bucket{G}[{W}])))", "{{group}} p99"),
    )),
    PanelSpec("Lag in seconds (max over partitions)", "s",
              "now - timestamp of the record at the committed offset; 0 when caught up. From "
              "the console's sampler where it runs, else the engines' gauge.", (
        Query(lag_by("max", "lagless_group_lag_seconds", "lagless_lag_seconds"), "{{group}}"),
    )),
    PanelSpec("Records lag (avg, max over partitions)", "short",
              "committed: log end - committed offset (console); unfinished: high watermark - "
              "first unfinished offset (engines). Two figures, each named.", (
        Query(tagged(f"avg by (group) (lagless_group_lag_records{G})", "committed") + " or " +
              tagged(f"avg by (group) (lagless_lag_records{G})", "unfinished"),
              "{{group}} {{lag}} avg"),
        Query(tagged(f"max by (group) (lagless_group_lag_records{G})", "committed") + " or " +
              tagged(f"max by (group) (lagless_lag_records{G})", "unfinished"),
              "{{group}} {{lag}} max"),
    )),
    PanelSpec("Rebalances", "short",
              "Group events in the interval: the console's count, else the assign callbacks of "
              "the member that saw the most.", (
        Query(f"sum by (group) (increase(lagless_group_rebalances_total{G}[{W}])) or "
              f"max by (group) (increase(lagless_rebalances_total{ASSIGN}[{W}]))",
              "{{group}}"),
    )),
    PanelSpec("Rebalance callback time (avg, p99)", "s",
              "One instance's rebalance callback, from its start to work resuming.", (
        Query(f"sum by (group) (rate(lagless_rebalance_callback_seconds_sum{G}[{W}])) / "
              f"sum by (group) (rate(lagless_rebalance_callback_seconds_count{G}[{W}]))",
              "{{group}} avg"),
        Query(f"histogram_quantile(0.99, sum by (group, le) "
              f"(rate(lagless_rebalance_callback_seconds_bucket{G}[{W}])))", "{{group}} p99"),
    )),
    PanelSpec("Throughput", "rps", "Records finished per second, by outcome.", (
        Query(f"sum by (group, outcome) (rate(lagless_records_processed_total{G}[{W}]))",
              "{{group}} {{outcome}}"),
    )),
    PanelSpec("In flight", "short", "Records dispatched and not finished.", (
        Query(f"sum by (group) (lagless_in_flight{G})", "{{group}}"),
    )),
    PanelSpec("Paused partitions", "short", "Partitions paused by backpressure now.", (
        Query(f"sum by (group) (lagless_paused_partitions{G})", "{{group}}"),
    )),
    PanelSpec("Dead letters", "rps", "Records sent to the dead-letter topic, by source topic.", (
        Query(f"sum by (group, topic) (rate(lagless_dlq_records_total{G}[{W}]))",
              "{{group}} {{topic}}"),
    )),
)  # fmt: skip


def panel(spec: PanelSpec) -> timeseries.Panel:
    built = (
        timeseries.Panel()
        .title(spec.title)
        .description(spec.description)
        .unit(spec.unit)
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
    )
    for index, query in enumerate(spec.queries):
        built = built.with_target(
            prometheus.Dataquery()
            .expr(query.expr)
            .legend_format(query.legend)
            .ref_id(chr(ord("A") + index))
        )
    return built


def build() -> dict[str, object]:
    """The dashboard as JSON-ready data."""
    board = (
        dashboard.Dashboard("lagless")
        .uid("lagless")
        .tags(["lagless", "kafka"])
        .refresh("30s")
        .time("now-1h", "now")
        .with_variable(dashboard.DatasourceVariable("datasource").type("prometheus"))
        .with_variable(
            dashboard.QueryVariable("group")
            .label("group")
            .datasource(DATASOURCE)
            .query(
                'label_values({__name__=~"lagless_lag_seconds|lagless_group_lag_seconds"}, group)'
            )
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        )
    )
    for spec in PANELS:
        board = board.with_panel(panel(spec))
    data: dict[str, object] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    return data


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        same = OUT.exists() and OUT.read_text() == text
        if not same:
            sys.stderr.write(f"{OUT} is not what the code builds: run {Path(__file__).name}\n")
        return 0 if same else 1
    OUT.write_text(text)
    sys.stdout.write(f"{OUT}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
