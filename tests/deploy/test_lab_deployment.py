"""``lagless lab rebalance --deployment FILE``: the rollout of a rendered manifest (replicas,
surge, minReadySeconds, the App's group settings and shutdown budget) run as a tiny lab on the
embedded broker, and what it took said on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lagless.deploy.options import RenderOptions
from lagless.deploy.plan import Partitions
from lagless.deploy.reader import read_rollout
from lagless.deploy.render import render, to_yaml, write
from lagless.errors import ConfigError
from tests.conftest import Cluster, run_cli
from tests.deploy.apps import payments_app

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "shutdown_budget_s": 5}


def rendered(tmp: Path, static: bool = False, **values: object) -> Path:
    app = payments_app(**({**FAST, "static_id": "pay"} if static else FAST))
    opts = RenderOptions.build(target="service:app", config_map="kafka", replicas=2, **values)
    _, documents = render(app, opts, Partitions(4, "--partitions"))
    path = tmp / "all.yaml"
    path.write_text(to_yaml(documents))
    return path


def test_the_reader_takes_the_rollout_and_the_apps_settings(tmp_path: Path) -> None:
    rollout = read_rollout(rendered(tmp_path, min_ready_s=2))
    assert (rollout.kind, rollout.replicas, rollout.max_surge, rollout.max_unavailable) == (
        "Deployment", 2, 1, 0,
    )  # fmt: skip
    assert rollout.min_ready_s == 2
    assert rollout.grace_period_s == 5 + 7.5 + 20 + 10 + 5 + 0.5  # drain, rounded up: 48
    scenario = rollout.scenario()
    assert (scenario.session_ms, scenario.heartbeat_ms, scenario.leave_group) == (6000, 1500, True)
    assert scenario.assignor == "cooperative-sticky" and not scenario.static
    assert scenario.consume_flags(0)[-2:] == ["--shutdown-budget", "5"]
    assert rollout.lab_values()["commit_interval_s"] == 1.0
    assert rollout.lab_values()["grace_period_s"] == rollout.grace_period_s  # the lab kills then
    static = read_rollout(rendered(tmp_path, static=True))
    assert (static.kind, static.max_surge, static.max_unavailable) == ("StatefulSet", 0, 1)
    assert static.scenario().static
    assert "--static-id" in static.scenario().consume_flags(1)


def test_a_file_that_is_not_a_rendered_manifest_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    for text, message in [
        ("kind: Service\n", "no Deployment or StatefulSet rendered by lagless deploy render"),
        ("a: [b\n", "not YAML"),
    ]:
        bad.write_text(text)
        with pytest.raises(ConfigError, match=message) as err:
            read_rollout(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="No such file"):
        read_rollout(tmp_path / "missing.yaml")


@pytest.mark.integration
@pytest.mark.slow
def test_a_tiny_lab_rolls_the_rendered_deployment(cluster: Cluster, tmp_path: Path) -> None:
    app = payments_app(**FAST)
    opts = RenderOptions.build(target="service:app", config_map="kafka", replicas=2, min_ready_s=1)
    files = write(render(app, opts, Partitions(4, "--partitions"))[1], tmp_path / "manifests")
    deployment = next(p for p in files if p.name.endswith("deployment.yaml"))
    result = run_cli(
        "-b", cluster.bootstrap, "lab", "rebalance", "--deployment", str(deployment),
        "--partitions", "4", "--rate", "200", "--warmup", "2", "--json",
        "--out", str(tmp_path / "lab"), timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "replicas 2, maxSurge 1, maxUnavailable 0, minReadySeconds 1" in result.stderr
    assert "session 6000 ms, heartbeat 1500 ms, leave on close True" in result.stderr
    (row,) = json.loads(result.stdout)["scenarios"]
    assert row["scenario"] == "big-payments"
    assert row["settings"]["session.timeout.ms"] == 6000
    assert (row["settings"]["max_surge"], row["settings"]["max_unavailable"]) == (1, 0)
    assert row["lost"] == 0 and row["committed_to_end"] is True
    refused = run_cli(
        "-b", cluster.bootstrap, "lab", "rebalance", "--deployment", str(deployment),
        "--instances", "3", timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--deployment sets --instances: give one or the other" in refused.stderr
