"""`lagless ui --scrape` of a `lagless run` instance (an App of two handlers in two groups),
read remotely over HTTP only: each group shows its handler as its member, with the handler's
status (owners, position, first unfinished offset) in the API and on the group page in Chromium,
checked against the broker's ends and committed offsets."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from lagless.kafka.admin import committed_offsets
from lagless.kafka.offsets import topic_ranges
from tests.conftest import Cluster
from tests.integration.browser import watched
from tests.integration.test_app_status import PER_PARTITION, TwoGroups
from tests.integration.ui_helpers import console, poll, request

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.integration

Key = tuple[str, int]


@pytest.mark.slow
def test_console_shows_each_handler_of_a_lagless_run_instance_in_its_group(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path, browser: Browser
) -> None:
    app = TwoGroups.make(cluster, make_topic)
    topics, groups = app.topics, app.groups
    target = f"127.0.0.1:{app.port}"
    # the console's state directory is not the instance's: it sees it through /status only
    with console(tmp_path / "ui-home", cluster.bootstrap, tmp_path, "--scrape", target) as (
        base, ui,
    ):  # fmt: skip
        proc = app.run(cluster, tmp_path / "run-home")
        try:
            for name, topic, group in zip(("first", "second"), topics, groups, strict=True):
                client = f"{socket.gethostname()}-{proc.pid}-{name}"
                path = "/api/groups/" + quote(group, safe="")
                ends = {(topic, r.partition): r.end for r in topic_ranges(cluster.conf, topic)}

                def shown(
                    path: str = path, client: str = client, ends: dict[Key, int] = ends
                ) -> dict[str, Any] | None:
                    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                    status, doc, _ = request(base.rstrip("/") + path)
                    if status != 200:  # the group not seen yet
                        return None
                    rows = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
                    settled = set(rows) == set(ends) and all(
                        rows[k]["owners"] == [client] and rows[k]["position"] == end
                        and rows[k]["first_unfinished"] == end == rows[k]["committed"]
                        for k, end in ends.items()
                    )  # fmt: skip
                    return doc if settled and doc["engine"] else None

                doc = poll(shown, 90, f"handler {name} shown as the owner of {group}")
                assert doc["members"] == 1
                seen = [(i["client_id"], i["handler"], i["pid"], i["source"])
                        for i in doc["instances"]]  # fmt: skip
                assert seen == [(client, name, proc.pid, target)]
                # the scraped figures of this group are its handler's, not the other's
                assert {p["instance"] for p in doc["engine"]} == {client}
                committed = committed_offsets(cluster.conf, group, [topic])
                assert committed == ends and set(ends.values()) == {PER_PARTITION}

            url = base.rstrip("/") + "/group/" + quote(groups[0], safe="")
            client = f"{socket.gethostname()}-{proc.pid}-first"
            with watched(browser, url, allowed=(base,)) as w:
                page = w.page
                page.wait_for_function(
                    "document.querySelectorAll('#partitions tbody tr').length === 3"
                )
                row = page.inner_text("#instances tbody")
                assert client in row and "first" in row and target in row, row
                assert "second" not in row
                cells = page.inner_text("#partitions tbody")
                assert cells.count(client) == 3, cells
                shot = Path("out") / "test-artefacts" / "ui-run-group-page.png"
                shot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shot), full_page=True)
                assert w.problems() == []
        finally:
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=90)
        assert proc.returncode == 0, stderr
    assert ui.proc.returncode == 0, ui.err()
