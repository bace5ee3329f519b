"""The static pages in a real browser (Chromium through Playwright): the run report and the lab's
page as a person sees them. Layout is measured in the DOM and on the charts' canvases: legends
clear of the axis labels, the measured window shaded and named, trigger and rollout legends
visible (also when printed), no overlap caveat without overlaps, the lab's summary table on one
line per cell at 1,400 px, no console error, and names carrying script shown as text, running
nothing. A screenshot of each page is kept in the test's tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lagless.lab.measures import measure
from lagless.lab.model import (
    EventKind,
    LagSample,
    Measures,
    Percentiles,
    ScenarioData,
    ScenarioReport,
    Stat,
)
from lagless.lab.page import render_page, slug
from lagless.lab.runner import OVERLAP_NOTE
from lagless.observe.report import PLOT_IDS, build_report
from lagless.observe.timeline import RebalanceEvent, Sample
from lagless.ui import assets
from lagless.ui.chartspec import Axis, Line, bars, timeseries
from tests.conftest import run_cli
from tests.integration.browser import Watched, box, intersects, watched
from tests.integration.test_observe_report import record_run
from tests.unit.lab_timelines import cooperative_surge, eager_stop_the_world, ev

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'
HOSTILE_PARTITIONS = (f"orders{SCRIPT}[0]", f"orders{IMG}[1]", "orders[2]")


# -- pages ------------------------------------------------------------------------------------


def run_samples() -> list[Sample]:
    """40 s of idle group join, then 20 s of records on three partitions with two rebalances."""
    idle = [Sample(ts=1000.0 + i, interval=1.0) for i in range(1, 41)]
    busy = []
    for i in range(20):
        lag = {k: float(100 * (p + 1) + 20 * i) for p, k in enumerate(HOSTILE_PARTITIONS)}
        events = []
        if i == 0:
            events = [RebalanceEvent(assigned=3, callbacks={"assign": 1})]
        elif i == 12:
            events = [RebalanceEvent(revoked=1, callbacks={"revoke": 1})]
        busy.append(
            Sample(
                ts=1041.0 + i, interval=1.0, throughput=300.0, input_rate=320.0,
                processed=300.0 * (i + 1), lag_records=sum(lag.values()), lag_seconds=16.8 - i / 2,
                e2e_p50=16.0 - i / 2, e2e_p95=16.5 - i / 2, e2e_p99=16.8 - i / 2,
                in_flight=32.0, lag_partitions=lag, events=events,
            )
        )  # fmt: skip
    return idle + busy


def report_page(tmp_path: Path) -> Path:
    html = build_report(
        run_samples(),
        title=f"run {SCRIPT}",
        settings={"group": f"g{IMG}", "max_in_flight": 200, "ordering": "key"},
    )
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


SCENARIOS = (
    "eager-defaults", "cooperative-defaults", "mitigated", "static", "kip848", "kip848-static",
)  # fmt: skip


def wide_measures() -> Measures:
    """Figures as wide as a long real run's (the widest cells of the summary table)."""
    return Measures(
        rebalances=12, rebalance_s=Stat(99.7, 114.5), max_unconsumed_s=114.5,
        max_lag_records=119_551, max_lag_s=114.7, e2e_ms=Percentiles(36_812, 112_062, 114_552),
        e2e_rollout_ms=Percentiles(58_191, 113_760, 114_552), lost=0, duplicated=12_345,
        ownership_overlaps=0, overlap_s=0.0, processed=133_996, produced=133_996,
    )  # fmt: skip


def with_peak_before_warm_up(data: ScenarioData) -> ScenarioData:
    """Lag over the run, with the tallest peak (the start's catch-up) before the warm-up."""
    data.lag = [LagSample(float(t), 200 + 5 * t, 0.5) for t in range(0, 90, 2)]
    data.lag.append(LagSample(5.0, 5000, 3.0))
    data.lag.sort(key=lambda s: s.ts)
    return data


def lab_items() -> list[tuple[ScenarioReport, ScenarioData | None]]:
    eager = with_peak_before_warm_up(eager_stop_the_world())
    for e in eager.events:  # an instance name carrying script
        if e.instance == "c":
            object.__setattr__(e, "instance", f"c{IMG}")
    overlapping = with_peak_before_warm_up(cooperative_surge())
    overlapping.events += [
        ev(22.0, "c", EventKind.ASSIGNED, 0),
        ev(24.0, "a", EventKind.REVOKED, 0),
    ]
    items: list[tuple[ScenarioReport, ScenarioData | None]] = []
    for name in SCENARIOS:
        data = {"eager-defaults": eager, "cooperative-defaults": overlapping}.get(name)
        measures = measure(data) if data is not None else wide_measures()
        note = OVERLAP_NOTE if name in ("eager-defaults", "cooperative-defaults") else None
        report = ScenarioReport(
            name, f"lab-{name}", f"g-{name}", {"group.protocol": "classic"}, True, note,
            measures, True,
        )  # fmt: skip
        items.append((report, data))
    hostile = ScenarioReport(
        f"odd {SCRIPT}", "t", "g", {}, False, f"no {IMG}", None, None
    )  # not supported: its note and name shown as text
    items.append((hostile, None))
    return items


def lab_page(tmp_path: Path) -> Path:
    path = tmp_path / "lab.html"
    path.write_text(render_page(f"Tansu {IMG}", lab_items()), encoding="utf-8")
    return path


# -- checks shared by both pages --------------------------------------------------------------


def chart_ids(page: Page) -> list[str]:
    ids: list[str] = page.eval_on_selector_all(".lg-chart", "els => els.map(e => e.id)")
    return ids


def dark_pixels(page: Page, chart_id: str, region: str) -> int:
    """Pixels drawn (darker than the grid) in a region of a chart's canvas: "x" the x axis'
    labels (below the plot), "y" the y axis' (left of it)."""
    count: int = page.evaluate(
        """([id, region]) => {
          const u = LaglessCharts.handle(id).uplot();
          const c = u.ctx.canvas, b = u.bbox;
          const [x, y, w, h] = region === "x"
            ? [0, b.top + b.height + 1, c.width, c.height - b.top - b.height - 1]
            : [0, b.top, b.left - 1, b.height];
          const data = u.ctx.getImageData(x, y, w, h).data;
          let n = 0;
          for (let i = 0; i < data.length; i += 4) {
            if (data[i + 3] > 200 && data[i] < 140 && data[i + 1] < 140 && data[i + 2] < 140) n++;
          }
          return n;
        }""",
        [chart_id, region],
    )
    return count


def check_charts_layout(page: Page) -> None:
    """Every chart: its legend below the canvas, clear of both axes' label areas, inside the
    chart's width; its legend entries clear of each other; its axis labels drawn."""
    for chart_id in chart_ids(page):
        if page.locator(f"#{chart_id} .u-over").count() == 0:
            continue  # a bar chart: no axes
        over = box(page, f"#{chart_id} .u-over")  # the plot area
        wrap = box(page, f"#{chart_id} .u-wrap")  # the canvas: plot and axes
        legend = box(page, f"#{chart_id} .lg-legend")
        x_labels = {**wrap, "top": over["bottom"]}
        y_labels = {**wrap, "right": over["left"]}
        assert wrap["bottom"] - over["bottom"] >= 14, (chart_id, wrap, over)  # room for labels
        assert not intersects(legend, x_labels), (chart_id, legend, x_labels)
        assert not intersects(legend, y_labels), (chart_id, legend, y_labels)
        assert legend["top"] >= wrap["bottom"]
        chart = box(page, f"#{chart_id}")
        assert chart["left"] - 1 <= legend["left"] and legend["right"] <= chart["right"] + 1
        items: list[Any] = page.eval_on_selector_all(
            f"#{chart_id} .lg-item",
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; })",
        )
        assert items, chart_id
        for i, a in enumerate(items):
            assert chart["left"] - 1 <= a["left"] and a["right"] <= chart["right"] + 1, chart_id
            for b in items[i + 1 :]:
                assert not intersects(a, b), (chart_id, a, b)
        assert dark_pixels(page, chart_id, "x") > 20, f"{chart_id}: no x-axis labels drawn"


def legend_texts(page: Page, chart_id: str) -> list[str]:
    texts: list[str] = page.eval_on_selector_all(
        f"#{chart_id} .lg-item", "els => els.map(e => e.textContent)"
    )
    return texts


def check_nothing_ran(w: Watched) -> None:
    assert w.page.evaluate("window.__pwned") is None
    assert w.page.locator("img").count() == 0  # no element was made from a name
    assert w.problems() == []


# -- the run report ---------------------------------------------------------------------------


@contextmanager
def looked_at(browser: Browser, path: Path) -> Iterator[Page]:
    """The page open at 1,400 px, a screenshot beside it (``<name>.png``), its charts' layout
    checked; after the test's checks, that nothing ran and nothing went wrong."""
    with watched(browser, path.as_uri()) as w:
        w.page.screenshot(path=str(path.with_suffix(".png")), full_page=True)
        check_charts_layout(w.page)
        yield w.page
        check_nothing_ran(w)


def test_run_report_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    with looked_at(browser, report_page(tmp_path)) as page:
        # "all" and every partition: distinct colours; the names shown as text
        lag = "plot-lag-records"
        assert legend_texts(page, lag)[:4] == ["all", *sorted(HOSTILE_PARTITIONS)]
        strokes = page.eval_on_selector_all(
            f"#{lag} .lg-line line", "els => els.map(e => e.getAttribute('stroke'))"
        )
        assert len(strokes) == 4 and len(set(strokes)) == 4
        assert legend_texts(page, "plot-rebalances") == [
            "partitions assigned", "partitions revoked"
        ]  # fmt: skip
        # the plots start where the records start, and say so
        start = page.evaluate(f"LaglessCharts.handle('{lag}').uplot().scales.x.min")
        assert start == 40.0
        assert "The plots start at 40.0 s" in page.locator("#plots-start").inner_text()
        # the figures' context, and callback time named as such
        summary = page.locator("#summary").inner_text()
        assert "already 16.8 s old" in summary and "max_in_flight 200" in summary
        assert "rebalance callback time, total" in summary
        assert "rebalance time, total" not in summary
        # hostile names: text, never markup
        assert page.locator("h1").inner_text() == f"run {SCRIPT}"
        assert f"g{IMG}" in page.locator("#settings").inner_text()


def test_a_chart_without_data_says_so(browser: Browser, tmp_path: Path) -> None:
    samples = [Sample(ts=1000.0 + i, interval=1.0, lag_records=5.0) for i in range(1, 6)]
    path = tmp_path / "quiet.html"
    path.write_text(build_report(samples), encoding="utf-8")
    with watched(browser, path.as_uri()) as w:
        assert w.page.locator("#plot-latency .lg-empty").inner_text() == "no data"
        assert w.page.locator("#plot-rebalances .lg-empty").inner_text() == "no rebalances"
        assert w.page.locator("#plot-lag-records .lg-empty").count() == 0
        assert w.problems() == []


# -- the lab's page ---------------------------------------------------------------------------


def pixel(page: Page, chart_id: str, x: float) -> list[int]:
    """The canvas pixel at ``x`` (data units), 3 px below the plot's top edge."""
    rgba: list[int] = page.evaluate(
        """([id, x]) => {
          const u = LaglessCharts.handle(id).uplot();
          const px = Math.round(u.valToPos(x, "x", true));
          return Array.from(u.ctx.getImageData(px, u.bbox.top + 3, 1, 1).data);
        }""",
        [chart_id, x],
    )
    return rgba


def test_lab_page_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    with looked_at(browser, lab_page(tmp_path)) as page:
        # the summary table: every cell on one line (a name too long for its column may break),
        # the table within the page at 1,400 px
        wrapped = page.eval_on_selector_all(
            "#summary tr:not(:last-child) td",
            """cells => cells.filter(td => {
                 const range = document.createRange();
                 range.selectNodeContents(td);
                 const tops = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
                 return tops.size > 1;
               }).map(td => td.textContent)""",
        )
        assert wrapped == []
        assert page.locator("#summary tr").count() == len(SCENARIOS) + 2  # head, odd one last
        assert "36.8 / 112 / 115 s" in page.locator("#summary").inner_text()  # long e2e: in s
        holder = box(page, ".wide")
        assert box(page, "#summary")["right"] <= holder["right"] + 1  # no scrolling needed
        key = "eager-defaults"
        lag = f"{key}-lag-records"
        # the measured window: what lies outside is shaded grey and named; the peak there said
        # (warm-up 10-20, rollout 20-60, cool-down 60-80; a canvas pixel is [r, g, b, alpha])
        before, inside = pixel(page, lag, 6.5), pixel(page, lag, 72.5)
        assert before[3] >= 40 and abs(before[0] - before[2]) < 12, before  # grey
        assert inside[3] < 10, inside  # measured, no band: the page's white shows
        for chart in (lag, f"{key}-strip"):
            texts = legend_texts(page, chart)
            for entry in (
                "outside the measured window", "rollout window",
                "instance started (trigger)", "instance stopped (trigger)",
            ):  # fmt: skip
                assert entry in texts, (chart, texts)
                item = page.locator(f"#{chart} .lg-item", has_text=entry).first
                assert item.is_visible() and item.locator("svg").is_visible()
        note = page.locator(f"#{lag} .lg-note").inner_text()
        assert "5,000 records at 5 s" in note and "outside the measured window" in note
        # the owners, named as text (one carries script)
        assert f"c{IMG}" in legend_texts(page, f"{key}-strip")
        # the overlap caveat: not where none was measured, with its count where one was
        assert OVERLAP_NOTE not in page.locator(f"#{key}").inner_text()
        cooperative = page.locator("#cooperative-defaults").inner_text()
        assert f"{OVERLAP_NOTE}: 1 in this run" in cooperative
        assert "two owners at once (overlap)" in legend_texts(page, "cooperative-defaults-strip")
        assert "two owners at once (overlap)" not in legend_texts(page, f"{key}-strip")
        # printed: the legends stay
        page.emulate_media(media="print")
        assert page.locator(f"#{lag} .lg-item", has_text="rollout window").is_visible()
        assert page.locator(f"#{lag} .lg-item", has_text="instance started (trigger)").is_visible()
        page.emulate_media(media="screen")
        assert f"odd {SCRIPT}" in page.locator(f"#{slug(f'odd {SCRIPT}')}").inner_text()
        assert f"Tansu {IMG}" in page.locator("#broker").inner_text()


def test_bar_charts_per_measure(browser: Browser, tmp_path: Path) -> None:
    spec = bars(
        "bars-rebalance", "rebalance time avg", "s", ["eager-defaults", f"static {IMG}"],
        [Line("service A", [6.0, 1.5]), Line("service B", [3.0, None])], better="lower",
    )  # fmt: skip
    path = tmp_path / "bars.html"
    path.write_text(assets.page("bars", "", assets.chart(spec)), encoding="utf-8")
    with watched(browser, path.as_uri()) as w:
        page = w.page
        labels = page.eval_on_selector_all(".lg-bar-label", "els => els.map(e => e.textContent)")
        assert labels == ["eager-defaults", f"static {IMG}"]
        values = page.eval_on_selector_all(".lg-bar-value", "els => els.map(e => e.textContent)")
        assert values == ["6 s", "3 s", "1.5 s", "-"]
        widths = page.eval_on_selector_all(
            ".lg-bar", "els => els.map(e => e.getBoundingClientRect().width)"
        )
        assert widths[0] > 0 and abs(widths[1] / widths[0] - 0.5) < 0.02
        assert abs(widths[2] / widths[0] - 0.25) < 0.02 and widths[3] == 0
        assert "(lower is better)" in page.locator("#bars-rebalance .lg-title").inner_text()
        assert legend_texts(page, "bars-rebalance") == ["service A", "service B"]
        check_nothing_ran(w)


def test_live_updates_redraw_in_place(browser: Browser, tmp_path: Path) -> None:
    """What the console does every second: the same chart with new data keeps its uPlot (no
    flicker); a chart whose series changed is drawn anew; a bad spec is one clear error."""
    first = timeseries(
        "live", "lag", "records", [0, 1, 2], [Line("all", [1, 2, 3], total=True)],
        Axis("epoch"),
    )  # fmt: skip
    path = tmp_path / "live.html"
    path.write_text(assets.page("live", "", assets.chart(first)), encoding="utf-8")
    with watched(browser, path.as_uri()) as w:
        page = w.page
        page.evaluate("window.__first = LaglessCharts.handle('live').uplot()")
        more = {**first, "x": [0, 1, 2, 3], "series": [{**first["series"][0],
                "values": [1, 2, 3, 40]}], "markers": [{"x": 2, "kind": "rebalance",
                "label": f"moved {SCRIPT}"}]}  # fmt: skip
        page.evaluate("spec => LaglessCharts.handle('live').update(spec)", more)
        same = page.evaluate("LaglessCharts.handle('live').uplot() === window.__first")
        assert same is True
        assert page.evaluate("LaglessCharts.handle('live').uplot().data[1][3]") == 40
        assert legend_texts(page, "live") == ["all", "rebalance"]
        other = {**more, "series": [*more["series"], {"label": "p0", "values": [0, 1, 1, 2]}]}
        page.evaluate("spec => LaglessCharts.handle('live').update(spec)", other)
        assert page.evaluate("LaglessCharts.handle('live').uplot() !== window.__first")
        assert legend_texts(page, "live") == ["all", "p0", "rebalance"]
        assert page.locator("#live .u-wrap").count() == 1  # the old chart is gone
        error = page.evaluate(
            "() => { try { LaglessCharts.mount(document.body, {type: 'pie'}); }"
            " catch (e) { return e.message; } }"
        )
        assert error == "lagless charts: unknown chart type pie"
        check_nothing_ran(w)


def test_report_of_a_recorded_run_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    """The real path: a Recorder's timeline, `lagless report` (the binary), the page."""
    run = tmp_path / "run"
    record_run(run)
    result = run_cli("report", str(run))
    assert result.returncode == 0, result.stderr
    with looked_at(browser, run / "report.html") as page:
        assert page.locator(".lg-chart").count() == len(PLOT_IDS)
        markers = legend_texts(page, "plot-rebalances")
        assert markers == ["partitions assigned"]
        assert "rebalance callback time, total" in page.locator("#summary").inner_text()
