"""The chart assets shipped in the package and their inlining into a static page."""

from __future__ import annotations

import json
import re

from lagless.ui import assets


def test_the_vendored_chart_library_and_its_licence_ship_in_the_package() -> None:
    assert assets.asset_text(assets.VENDOR_JS).startswith("/*! https://github.com/leeoniya/uPlot")
    assert "MIT License" in assets.asset_text("vendor/uPlot.LICENSE")
    assert "LaglessCharts" in assets.asset_text(assets.CHARTS_JS)
    assert ".lg-legend" in assets.asset_text(assets.CHARTS_CSS)


def test_inlined_scripts_load_nothing_and_mount_the_charts() -> None:
    code = assets.scripts()
    assert " src=" not in code and "<link" not in code
    assert code.endswith("<script>LaglessCharts.mountAll(document);</script>")
    # every <script> opened is closed once: no "</script" inside an inlined file ends one early
    assert code.count("<script>") == code.count("</script>") == 3
    assert "<style>" in assets.head() and "uplot" in assets.head()


def test_a_spec_cannot_end_its_script_element() -> None:
    hostile = "</script><script>alert(1)</script> & <img src=x onerror=alert(2)>"
    html = assets.chart({"id": 'c"1', "title": hostile, "series": []})
    assert html.count("</script>") == 1  # only the element's own end
    assert 'id="c&quot;1"' in html and 'data-lg-spec="c&quot;1-spec"' in html
    body = re.search(r'<script type="application/json" id="[^"]+">(.*)</script>', html)
    assert body is not None
    assert json.loads(body.group(1))["title"] == hostile  # the text itself, unchanged


def test_finite_turns_missing_values_into_gaps() -> None:
    assert assets.finite(1.5) == 1.5
    assert assets.finite(None) is None
    assert assets.finite(float("nan")) is None
    assert assets.finite(float("inf")) is None


def test_the_assets_request_nothing() -> None:
    for name in (*assets.SCRIPTS, *assets.STYLESHEETS):
        text = assets.asset_text(name)
        for call in ("fetch(", "XMLHttpRequest", "import(", "WebSocket", "sendBeacon", "url(",
                     "@import", ".src="):  # fmt: skip
            assert call not in text, (name, call)
        urls = set(re.findall(r"https?://[^\s\"')]+", text))
        # the licence banner and the SVG namespace (a name, never loaded)
        assert urls <= {"https://github.com/leeoniya/uPlot", "http://www.w3.org/2000/svg"}, urls


def test_a_served_page_links_every_asset_in_load_order() -> None:
    html = assets.linked("/static/")
    assert html == (
        '<link rel=stylesheet href="/static/vendor/uPlot.min.css">'
        '<link rel=stylesheet href="/static/charts.css">'
        '<script src="/static/vendor/uPlot.iife.min.js"></script>'
        '<script src="/static/charts.js"></script>'
    )
    for name in (*assets.STYLESHEETS, *assets.SCRIPTS):
        assert assets.asset_bytes(name)  # what the server answers for each link
