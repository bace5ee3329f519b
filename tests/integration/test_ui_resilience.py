"""`lagless ui` against what breaks samplers: topics deleted while it samples, scrape targets
that answer garbage, instances that publish malformed status."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.kafka.admin import delete_topic
from tests.conftest import Cluster
from tests.integration.ui_helpers import api, console, poll

pytestmark = pytest.mark.integration
DELETIONS = 8


def ends_of(base: str) -> dict[str, int]:
    return {t["topic"]: t["end"] for t in api(base, "/api/topics")}


def test_topics_deleted_while_sampled_leave_the_console_alive(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    kept = make_topic(2)
    with console(tmp_path / "home", cluster.bootstrap, tmp_path, "--interval", "0.2") as (
        base,
        ui,
    ):
        poll(lambda: kept in ends_of(base), 60, "the kept topic sampled")
        for i in range(DELETIONS):
            doomed = make_topic(3)
            cluster.produce(doomed, [b"x"] * 20)
            poll(lambda: ends_of(base).get(doomed) == 20, 30, f"topic {i} sampled")  # noqa: B023
            delete_topic(cluster.conf, doomed, 15.0)
            poll(lambda: doomed not in ends_of(base), 30, f"topic {i} gone")  # noqa: B023
            assert ui.proc.poll() is None, f"lagless ui died: {ui.err()[-2000:]}"
        cluster.produce(kept, [b"y"] * 7)
        poll(lambda: ends_of(base).get(kept) == 7, 30, "the kept topic still sampled")
        assert api(base, "/api/cluster")["up"] is True
        assert ui.proc.poll() is None
