"""The HTML report and its SVG charts, from synthetic timelines."""

from __future__ import annotations

import re

import pytest

from lagless.errors import LaglessError
from lagless.observe.report import PLOT_IDS, build_report, summary, weighted_median
from lagless.observe.svg import Chart, Series, nice_ticks, render, segments
from lagless.observe.timeline import RebalanceEvent, Sample


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


def test_nice_ticks_cover_the_top_with_round_steps() -> None:
    assert nice_ticks(9.3, 5) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0.042, 4) == [0, 0.02, 0.04, 0.06]
    assert nice_ticks(1000, 4) == [0, 500, 1000]


def test_missing_values_break_the_line() -> None:
    points = [(0, 1.0), (1, None), (2, 3.0), (3, 4.0)]
    assert segments(points) == [[(0, 1.0)], [(2, 3.0), (3, 4.0)]]
    svg = render(Chart("c", "t", "u", [Series("s", points)]))
    assert svg.count("<polyline") == 2
    assert svg.startswith('<svg id="c"') and svg.endswith("</svg>")


def test_chart_without_data_says_so() -> None:
    assert "no data" in render(Chart("c", "t", "u", [Series("s", [(0, None)])]))


def test_summary_figures() -> None:
    rows = dict(summary(run()))
    assert rows["records processed"] == "1,000"
    assert rows["throughput, mean"] == "100 records/s"
    assert rows["lag (records), max / at end"] == "50 / 41"
    assert rows["lag (seconds), max / at end"] == "2 s / 0.5 s"
    assert rows["e2e latency p99 (worst interval)"] == "0.2 s"
    assert rows["rebalance events"] == "1"
    assert rows["partitions assigned / revoked / lost"] == "3 / 0 / 0"


def test_weighted_median() -> None:
    assert weighted_median([(1.0, 1), (5.0, 10), (9.0, 1)]) == 5.0
    assert weighted_median([(1.0, 0)]) is None


def test_report_has_every_plot_and_nothing_external() -> None:
    html = build_report(run(), "my <run>")
    for plot in PLOT_IDS:
        assert f'<svg id="{plot}"' in html
    assert "my &lt;run&gt;" in html
    assert "<script" not in html and not re.search(r"https?://", html)
    assert "+3 assigned" in html  # the rebalance event is drawn and listed


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
    for plot in ("plot-paused", "plot-dlq"):
        assert f'id="{plot}"' in html
    assert "orders[0]" in html and "orders[1]" in html  # lag per partition, in the legend
    assert ">input<" in html and ">processed<" in html
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
    assert 'id="plot-batches"' in html
    assert 'id="plot-batches"' not in build_report(run())  # no Spark, no batch plot


def test_long_legends_wrap_inside_the_chart() -> None:
    names = [f"demo-jobs-20261123-140457[{p}]" for p in range(9)]
    series = [Series(n, [(0.0, 1.0), (1.0, 2.0)]) for n in names]
    svg = render(Chart("c", "title", "records", series))
    xs = [float(x) for x in re.findall(r'<text x="([-\d.]+)"[^>]*class="legend"', svg)]
    assert len(xs) == 9 and min(xs) >= 0
    assert all(x + 7 * len(names[0]) <= 920 for x in xs)  # every label ends inside
    height = int(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert height > 230  # the chart grew to hold the wrapped rows
