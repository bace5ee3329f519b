"""The HTML report and its chart specs, from synthetic timelines."""

from __future__ import annotations

import math

import pytest

from lagless.errors import LaglessError
from lagless.observe.report import (
    PLOT_IDS,
    build_report,
    chart_start,
    charts,
    context,
    summary,
    weighted_median,
)
from lagless.observe.timeline import RebalanceEvent, Sample
from lagless.ui.chartspec import Axis, Line, timeseries
from tests.chartspecs import assert_self_contained, drawn_lines, own_markup, specs


def run(n: int = 10) -> list[Sample]:
    samples = []
    for i in range(n):
        events = [RebalanceEvent(assigned=3, callbacks={"assign": 1})] if i == 4 else []
        samples.append(
            Sample(
                ts=1000.0 + i + 1, interval=1.0, throughput=100.0, processed=100.0 * (i + 1),
                lag_records=50.0 - i, lag_seconds=2.0 if i == 2 else 0.5,
                e2e_p50=0.01, e2e_p95=0.05, e2e_p99=0.2 if i == 7 else 0.1,
                commits=float(i), events=events,
            )
        )  # fmt: skip
    return samples


def test_missing_values_break_the_line() -> None:
    spec = timeseries("c", "t", "u", [0, 1, 2, 3], [Line("s", [1.0, None, math.nan, 4.0])])
    assert spec["series"][0]["values"] == [1.0, None, None, 4.0]  # gaps, and JSON has no NaN
    assert spec["x"] == [0.0, 1.0, 2.0, 3.0]


def test_chart_without_data_has_no_drawn_line() -> None:
    spec = timeseries("c", "t", "u", [0.0], [Line("s", [None])], Axis(start=0.0, end=1.0))
    assert drawn_lines(spec) == 0  # the page then says "no data" (test_pages_browser.py)


def test_summary_figures() -> None:
    rows = dict(summary(run()))
    assert rows["records processed"] == "1,000"
    assert rows["throughput, mean"] == "100 records/s"
    assert rows["lag (records), max / at end"] == "50 / 41"
    assert rows["lag (seconds), max / at end"] == "2 s / 0.5 s"
    assert rows["e2e latency p99 (worst interval)"] == "0.2 s"
    assert rows["rebalance events"] == "1"
    assert rows["partitions assigned / revoked / lost"] == "3 / 0 / 0"
    assert "rebalance callback time, total" in rows and "rebalance time, total" not in rows


def test_weighted_median() -> None:
    assert weighted_median([(1.0, 1), (5.0, 10), (9.0, 1)]) == 5.0
    assert weighted_median([(1.0, 0)]) is None


def test_report_has_every_plot_and_nothing_external() -> None:
    html = build_report(run(), "my <run>")
    plots = specs(html)
    assert list(plots) == list(PLOT_IDS)
    assert "my &lt;run&gt;" in html and "my <run>" not in own_markup(html)
    assert_self_contained(html)
    # the rebalance event is drawn on every plot and listed
    assert all(p["markers"][0]["label"] == "+3 assigned" for p in plots.values())
    assert "<td class=num>3</td>" in html


def test_empty_timeline_is_an_error() -> None:
    with pytest.raises(LaglessError, match="no samples"):
        build_report([])


def test_report_shows_settings_input_rate_partitions_paused_and_dlq() -> None:
    samples = [
        Sample(ts=1000.0 + i, interval=1.0, throughput=90.0, input_rate=120.0, dlq_rate=1.0,
               lag_records=5.0 * i, lag_partitions={"orders[0]": 3.0 * i, "orders[1]": 2.0 * i},
               paused=1.0 if i == 2 else 0.0)
        for i in range(1, 5)
    ]  # fmt: skip
    html = build_report(samples, settings={"group": "g-orders", "max_in_flight": 200})
    assert "<th>group</th><td>g-orders</td>" in html
    assert "<th>max_in_flight</th><td>200</td>" in html
    plots = specs(html)
    assert {"plot-paused", "plot-dlq"} <= set(plots)
    lag = [s["label"] for s in plots["plot-lag-records"]["series"]]
    assert lag == ["all", "orders[0]", "orders[1]"]  # lag per partition, in the legend
    assert plots["plot-lag-records"]["series"][0].get("total") is True  # its own colour
    assert [s["label"] for s in plots["plot-throughput"]["series"]] == ["processed", "input"]
    assert "note" not in plots["plot-throughput"]
    # a series with no value at all is said to be missing, not left as an empty legend entry
    assert specs(build_report(run()))["plot-throughput"]["note"] == (
        "Not measured in this run: input."
    )
    assert "No settings recorded" in build_report(samples)


def test_backlog_and_micro_batch_duration() -> None:
    samples = [
        Sample(ts=1000.0, interval=1.0),  # before the consumer reported anything
        Sample(ts=1001.0, interval=1.0, lag_records=600.0, batches=1.0, batch_seconds=2.5),
        Sample(ts=1002.0, interval=1.0, processed=600.0, batches=2.0, batch_seconds=4.0),
    ]
    rows = dict(summary(samples))
    assert rows["lag (records) at start: the backlog found"] == "600"
    assert rows["micro-batch duration, max"] == "4 s"
    html = build_report(samples)
    assert "plot-batches" in specs(html)
    assert "plot-batches" not in specs(build_report(run()))  # no Spark, no batch plot


def test_plots_start_where_records_start_and_say_so() -> None:
    idle = [Sample(ts=1000.0 + i, interval=1.0) for i in range(1, 41)]  # 40 s of group join
    busy = [
        Sample(ts=1041.0 + i, interval=1.0, throughput=50.0, processed=50.0 * (i + 1),
               lag_records=10.0, lag_seconds=1.0)
        for i in range(5)
    ]  # fmt: skip
    samples = idle + busy
    assert chart_start(samples) == 40.0
    assert all(spec["xMin"] == 40.0 for spec in charts(samples))
    html = build_report(samples)
    assert "The plots start at 40.0 s" in html and "joining its group" in html
    assert chart_start(run()) == 0.0 and "id=plots-start" not in build_report(run())


def test_summary_figures_come_with_their_context() -> None:
    samples = [
        Sample(ts=1001.0, interval=1.0, lag_records=600.0, lag_seconds=16.8),
        Sample(ts=1002.0, interval=1.0, throughput=600.0, processed=600.0, e2e_p50=17.0,
               in_flight=32.0),
    ]  # fmt: skip
    rows = dict(summary(samples))
    assert rows["lag (seconds) at start: the backlog's age"] == "16.8 s"
    why = context(samples, {"max_in_flight": 200, "ordering": "key"})
    assert "already 16.8 s old" in why["e2e latency p50 (median interval)"]
    assert "max_in_flight 200" in why["in flight, max"] and "per key" in why["in flight, max"]
    assert "callbacks" in why["rebalance callback time, total"]
    html = build_report(samples, settings={"max_in_flight": 200, "ordering": "partition"})
    assert "one record per partition at a time" in html
    caught_up = [Sample(ts=1001.0, interval=1.0, throughput=5.0, processed=5.0, e2e_p50=0.1)]
    assert "e2e latency p50 (median interval)" not in context(caught_up, {})  # no backlog's age
    assert "in flight, max" not in context(caught_up, {})  # no settings: no limit to name
