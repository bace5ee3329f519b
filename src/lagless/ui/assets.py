"""The chart assets (vendored uPlot + ``charts.js``) and their inlining into a static HTML page.

The live console serves the files of ``lagless/ui/static/`` (:func:`asset_bytes`) and links them
(:func:`linked`); a static page
(the run report, the lab's page) inlines them (:func:`head`, :func:`scripts`) so that it works
offline as one file. A chart is an element naming a JSON spec (:func:`chart`); the page's last
script mounts them all (``LaglessCharts.mountAll``). The spec format is documented at the top of
``static/charts.js``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from html import escape
from importlib import resources
from typing import Any

STATIC = "static"
VENDOR_CSS = "vendor/uPlot.min.css"
VENDOR_JS = "vendor/uPlot.iife.min.js"
CHARTS_CSS = "charts.css"
CHARTS_JS = "charts.js"
# the files a page needs, in load order (what the console serves under /static/)
STYLESHEETS = (VENDOR_CSS, CHARTS_CSS)
SCRIPTS = (VENDOR_JS, CHARTS_JS)


@cache
def asset_bytes(name: str) -> bytes:
    """The content of ``static/<name>`` shipped in the package (``vendor/uPlot.min.css`` ...)."""
    return resources.files("lagless.ui").joinpath(STATIC, name).read_bytes()


def asset_text(name: str) -> str:
    return asset_bytes(name).decode("utf-8")


def _inline_script(source: str) -> str:
    # "</script" would end the element early and "<!--" change how it is parsed: "<\/script"
    # and "<\!--" are the same text to JavaScript
    safe = source.replace("</script", "<\\/script").replace("<!--", "<\\!--")
    return "<script>" + safe + "</script>"


def head() -> str:
    """The ``<style>`` elements to put in a static page's ``<head>``."""
    return "".join(f"<style>{asset_text(name)}</style>" for name in STYLESHEETS)


def scripts() -> str:
    """The scripts to put at the end of a static page's ``<body>``: uPlot, charts.js, and the
    call that draws every chart of the page."""
    code = "".join(_inline_script(asset_text(name)) for name in SCRIPTS)
    return code + _inline_script("LaglessCharts.mountAll(document);")


def linked(prefix: str = "/static/") -> str:
    """For a served page (the console): the stylesheets and scripts as links under ``prefix``,
    where the server answers :func:`asset_bytes` of each name. The page mounts its charts."""
    links = "".join(f'<link rel=stylesheet href="{escape(prefix + n)}">' for n in STYLESHEETS)
    return links + "".join(f'<script src="{escape(prefix + n)}"></script>' for n in SCRIPTS)


def json_for_script(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element: ``<``, ``>`` and ``&``
    escaped (so a name holding ``</script>`` cannot end it), no NaN (JSON has none: null)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def chart(spec: Mapping[str, Any]) -> str:
    """A chart's element and its spec (``spec["id"]`` names the element; the spec's JSON sits in
    ``<script type="application/json" id="<id>-spec">``)."""
    chart_id = str(spec["id"])
    spec_id = f"{chart_id}-spec"
    return (
        f'<div class="lg-chart" id="{escape(chart_id)}" data-lg-spec="{escape(spec_id)}"></div>'
        f'<script type="application/json" id="{escape(spec_id)}">{json_for_script(spec)}</script>'
    )


def finite(value: float | None) -> float | None:
    """A value for a spec: None for a missing or non-finite one (a gap in the line)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def page(title: str, style: str, body: str) -> str:
    """A whole static HTML document: ``body`` (HTML) with the chart assets inlined."""
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        f"<title>{escape(title)}</title>\n{head()}<style>{style}</style>\n</head>\n<body>\n"
        f"{body}{scripts()}\n</body>\n</html>\n"
    )
