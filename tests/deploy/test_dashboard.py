"""deploy/grafana/lagless.json is what deploy/grafana/build_dashboard.py builds, loads back
into grafana-foundation-sdk's model, and has the seed's panels plus the engine's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "grafana" / "build_dashboard.py"
BOARD = ROOT / "deploy" / "grafana" / "lagless.json"
PANELS = (
    "End-to-end latency (avg, p99)", "Rebalance callback time (avg, p99)",
    "Records lag (avg, max over partitions)", "Lag in seconds (max over partitions)",
    "Throughput", "In flight", "Paused partitions", "Dead letters", "Rebalances",
)  # fmt: skip


def builder() -> ModuleType:
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk (lagless[dev])")
    spec = importlib.util.spec_from_file_location("build_dashboard", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_committed_dashboard_is_what_the_code_builds() -> None:
    assert BOARD.read_text() == builder().render(), "run python deploy/grafana/build_dashboard.py"


def test_it_loads_back_into_the_sdk_with_every_panel() -> None:
    builder()
    from grafana_foundation_sdk.models.dashboard import Dashboard

    board = Dashboard.from_json(json.loads(BOARD.read_text()))
    titles = [p.title for p in board.panels or []]
    assert set(PANELS) <= set(titles)


def test_every_query_is_per_group() -> None:
    board = json.loads(BOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    assert len(exprs) == 12
    for expr in exprs:
        assert 'group=~"$group"' in expr
        assert "by (group" in expr
