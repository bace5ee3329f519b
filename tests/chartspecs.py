"""Reading a static page's charts back: the JSON specs that charts.js draws, and the page without
the inlined chart assets (for checks of the page's own markup)."""

from __future__ import annotations

import json
import re
from typing import Any

from lagless.ui import assets

SPEC = re.compile(r'<script type="application/json" id="([^"]+)-spec">(.*?)</script>', re.S)
EXTERNAL = re.compile(r"""https?://|\ssrc\s*=|<link\b|@import|url\(""", re.I)


def specs(html: str) -> dict[str, dict[str, Any]]:
    """Each chart's spec by chart id, in page order."""
    out: dict[str, dict[str, Any]] = {}
    for chart_id, body in SPEC.findall(html):
        spec = json.loads(body)
        assert spec["id"] == chart_id
        assert f'<div class="lg-chart" id="{chart_id}" data-lg-spec="{chart_id}-spec">' in html
        out[chart_id] = spec
    return out


def own_markup(html: str) -> str:
    """The page without the inlined chart assets (the same for every page) and chart specs."""
    assert html.count(assets.head()) == 1 and html.count(assets.scripts()) == 1
    return SPEC.sub("", html.replace(assets.head(), "").replace(assets.scripts(), ""))


def assert_self_contained(html: str) -> None:
    """Nothing loaded from elsewhere: no URL, src, link or import in the page's own markup, and
    the only scripts are the inlined chart assets."""
    mine = own_markup(html)
    assert not EXTERNAL.search(mine), EXTERNAL.search(mine)
    assert "<script" not in mine


def drawn_lines(spec: dict[str, Any]) -> int:
    """Series with at least one value (what the chart draws a line or point for)."""
    return sum(any(v is not None for v in s["values"]) for s in spec.get("series", []))
