"""`lagless ui` end to end: the embedded broker, a steady producer, a group of two
`lagless consume` members (one stopped and restarted, then killed with -9), the console's API
and its group page in Chromium, checked against the broker and the instances' own status."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from lagless.broker.embedded import free_port
from lagless.kafka.offsets import topic_ranges
from tests.conftest import Cluster
from tests.integration.browser import watched
from tests.integration.ui_helpers import (
    Proc,
    api,
    console,
    env_for,
    poll,
    request,
)

PARTITIONS = 4


if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.integration


def member(name: str, topic: str, group: str, home: Path, cluster: Cluster, out: Path,
           port: int) -> Proc:  # fmt: skip
    return Proc(
        ["consume", "--topic", topic, "--group", group, "--handler", "noop", "--on-failure",
         "stop", "--client-id", name, "--session-timeout-ms", "6000", "--heartbeat-ms", "1000",
         "--metrics-port", str(port), "--commit-interval", "0.5"],
        env_for(home, cluster.bootstrap), out, name,
    )  # fmt: skip


def owners(doc: dict[str, Any]) -> dict[tuple[str, int], list[str]]:
    return {(p["topic"], p["partition"]): p["owners"] for p in doc["partitions"]}


@pytest.mark.slow
def test_console_follows_a_group_through_a_restart_and_a_kill(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    tmp_path: Path,
    browser: Browser,
) -> None:
    topic = make_topic(PARTITIONS)
    home = tmp_path / "home"
    env = env_for(home, cluster.bootstrap)
    with console(home, cluster.bootstrap, tmp_path) as (base, ui):
        producer = Proc(["produce", "--topic", topic, "--workload", "events", "--rate", "80",
                         "--duration", "45"], env, tmp_path, "producer")  # fmt: skip
        time.sleep(4)  # a backlog builds before anyone consumes
        ports = {"c1": free_port(), "c2": free_port()}
        members = {n: member(n, topic, group, home, cluster, tmp_path, ports[n]) for n in ports}
        path = "/api/groups/" + quote(group, safe="")

        def both_own() -> dict[str, Any] | None:
            status, doc, _ = request(base.rstrip("/") + path)
            if status != 200:
                return None
            held = owners(doc)
            names = {o for os_ in held.values() for o in os_}
            return doc if len(held) == PARTITIONS and names == {"c1", "c2"} and all(
                len(o) == 1 for o in held.values()) else None  # fmt: skip

        doc = poll(both_own, 90, "both members own partitions")
        # the owners the console shows are what the instances say they own
        for name, port in ports.items():
            _, status, _ = request(f"http://127.0.0.1:{port}/status")
            mine = {(p["topic"], p["partition"]) for p in status["partitions"]}
            shown = {k for k, o in owners(doc).items() if o == [name]}
            assert mine == shown, (name, mine, shown)
            assert all(p["first_unfinished"] is None or p["first_unfinished"] >= 0
                       for p in status["partitions"])  # fmt: skip

        # one member stops: the other takes every partition; one rebalance is logged
        assert members["c2"].stop() == 0, members["c2"].err()
        poll(lambda: set(map(tuple, owners(api(base, path)).values())) == {("c1",)}, 60,
             "c1 owns every partition after c2 stopped")  # fmt: skip
        members["c2"] = member("c2", topic, group, home, cluster, tmp_path, ports["c2"])
        doc = poll(both_own, 90, "c2 owns partitions again after its restart")
        rebalances = poll(lambda: api(base, path)["rebalances"], 30, "a closed rebalance")
        assert rebalances[0]["moved"] >= 1 and rebalances[0]["duration_s"] is not None

        # the page: lag chart, a rebalance marker and both members in the strip, the tables
        url = base.rstrip("/") + "/group/" + quote(group, safe="")
        with watched(browser, url, allowed=(base,)) as w:
            page = w.page
            page.wait_for_function(
                f"document.querySelectorAll('#partitions tbody tr').length === {PARTITIONS}"
            )
            legend = poll(lambda: page.inner_text("#chart-strip"), 30, "the strip's legend",
                          every=0.5)  # fmt: skip
            poll(lambda: {"c1", "c2"} <= set(page.inner_text("#chart-strip").split()), 30,
                 "both members in the strip")  # fmt: skip
            assert "rebalance" in page.inner_text("#chart-lag"), legend
            # the scraped instances' rebalance callbacks are markers too
            assert "partitions assigned" in page.inner_text("#chart-lag")
            assert page.locator("#rebalances tbody tr").count() >= 1
            cells = page.inner_text("#partitions tbody")
            assert "c1" in cells and "c2" in cells
            shot = Path("out") / "test-artefacts" / "ui-group-page.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert w.problems() == []

        # the producer ends and the group catches up: lag rose and fell, ends are the broker's
        assert producer.proc.wait(120) == 0, producer.err()
        ends = {(r.topic, r.partition): r.end for r in topic_ranges(cluster.conf, topic)}

        def caught_up() -> bool:
            doc = api(base, path)
            shown = {(p["topic"], p["partition"]): p["end"] for p in doc["partitions"]}
            return doc["lag"] == 0 and shown == ends

        poll(caught_up, 60, "the console shows the group caught up at the broker's ends")
        series = api(base, path + "/series")
        lags = [s["lag"] for s in series]
        peak = lags.index(max(lags))
        assert max(lags) > 0 and lags[-1] == 0 and peak < len(lags) - 1

        # kill -9 of an instance: it leaves the owners within 3 s (+ one sampling interval)
        members["c2"].proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        members["c2"].proc.wait(10)
        poll(lambda: all("c2" not in o for o in owners(api(base, path)).values()), 4.5,
             "the killed instance is no longer an owner", every=0.1)  # fmt: skip
        assert time.monotonic() - killed < 4.5
        members["c1"].stop()
        metrics = request(base.rstrip("/") + "/metrics")[1]
        assert f'lagless_group_rebalances_total{{group="{group}"}}' in metrics
    assert ui.proc.returncode == 0, ui.err()  # SIGTERM stops the console cleanly
