"""`lagless ui` tried as a hostile user would: script in names and records, no token off
loopback, requests without the token, writes without --allow-writes or CSRF, the broker frozen."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

import pytest
from confluent_kafka import Producer

from lagless.broker.embedded import EmbeddedBroker, free_port
from lagless.kafka.admin import alter_committed_offsets, committed_offsets
from tests.conftest import LAGLESS, Cluster
from tests.integration import ui_helpers
from tests.integration.browser import watched
from tests.integration.ui_helpers import (
    api,
    console,
    poll,
    request,
)

HOSTILE_GROUP = "<img src=x onerror=alert(1)>"  # no '/': Tansu truncates listed ids at '/'
HOSTILE_VALUE = b"<script>alert(2)</script>\x00\xff"
TOKEN = "a-long-enough-test-token-0123456789"


if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.integration


def test_script_in_group_ids_and_records_is_shown_as_text(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path, browser: Browser
) -> None:
    topic = make_topic(1)
    producer = Producer(cluster.conf)
    producer.produce(topic, HOSTILE_VALUE, key=b"<svg onload=alert(3)>",
                     headers=[("h<b>", b"<img src=y onerror=alert(4)>")])  # fmt: skip
    producer.produce(topic, b"plain")
    assert producer.flush(10) == 0
    group = f"{HOSTILE_GROUP} {os.getpid()}-{time.time_ns()}"
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 1})
    with console(tmp_path / "home", cluster.bootstrap, tmp_path) as (base, _ui):
        path = "/api/groups/" + quote(group, safe="")
        doc = poll(lambda: (r := request(base.rstrip("/") + path))[0] == 200 and r[1], 30,
                   "the hostile group")  # fmt: skip
        assert doc["group"] == group and doc["lag"] == 1  # under its real id, with its offsets
        names = [g["group"] for g in api(base, "/api/groups?limit=1000")]
        assert names.count(group) == 1 and not any("%3C" in n and str(os.getpid()) in n
                                                  for n in names)  # fmt: skip
        with watched(browser, base, allowed=(base,)) as w:
            page = w.page
            page.wait_for_selector("#groups tbody tr")
            poll(lambda: group in page.inner_text("#groups"), 10, "the id as text", every=0.3)
            page.goto(base.rstrip("/") + "/group/" + quote(group, safe=""))
            assert page.inner_text("#group-name") == group
            page.goto(base.rstrip("/") + "/topic/" + quote(topic, safe=""))
            records = page.inner_text("#records")
            assert "<script>alert(2)</script>\\x00\\xff" in records
            assert "<svg onload=alert(3)>" in records
            assert "h<b>=<img src=y onerror=alert(4)>" in records
            assert page.locator("img").count() == 0 and page.locator("svg[onload]").count() == 0
            page.wait_for_timeout(1500)  # a poll or two of the live updates
            assert w.problems() == []


def test_off_loopback_needs_a_token(cluster: Cluster, tmp_path: Path) -> None:
    env = ui_helpers.env_for(tmp_path, cluster.bootstrap)
    result = subprocess.run([LAGLESS, "ui", "--host", "0.0.0.0", "--port", "0"], env=env,
                            capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lagless: error: --host 0.0.0.0 is not loopback: give a token (--token or "
        "LAGLESS_UI_TOKEN) so the console is not open to anyone who can reach it"
    ]
    short = subprocess.run([LAGLESS, "ui", "--token", "short", "--port", "0"], env=env,
                           capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    assert short.returncode == 2 and "at least 16 characters" in short.stderr
    by_env = subprocess.run([LAGLESS, "ui", "--host", "0.0.0.0", "--port", "0"],
                            env={**env, "LAGLESS_UI_TOKEN": "short"}, capture_output=True,
                            text=True, timeout=180, check=False)  # fmt: skip
    assert by_env.returncode == 2 and by_env.stderr.strip().splitlines() == [
        "lagless: error: --token must be at least 16 characters"
    ]  # the variable is read, and is no unknown setting


def test_token_login_and_read_only(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path, browser: Browser
) -> None:
    topic = make_topic(1)
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 0})
    with console(tmp_path / "home", cluster.bootstrap, tmp_path, "--token", TOKEN) as (base, _):
        for path in ("/", "/api/groups", "/metrics", f"/group/{group}"):
            status, _, _headers = request(base.rstrip("/") + path)
            assert status == 401, path
        status, groups, _ = request(base.rstrip("/") + "/api/groups",
                                    headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert status == 200 and isinstance(groups, list)
        wrong = request(base.rstrip("/") + "/api/groups", headers={"Authorization": "Bearer x"})
        assert wrong[0] == 401
        # read-only: a POST is refused even with the token and the page's CSRF token
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = poll(lambda: request(base.rstrip("/") + "/", headers=auth)[1], 10, "overview")
        csrf = re.search(r"name='csrf-token' content='([0-9a-f]+)'", page)
        assert csrf is not None
        form = urlencode({"csrf": csrf.group(1), "topic": topic, "to": "latest", "confirm": "yes"})
        headers = {**auth, "Accept": "application/json"}
        url = base.rstrip("/") + f"/group/{group}/reset-offsets"
        status, body, _ = request(url, "POST", form.encode(), headers)
        assert status == 403 and "read-only" in json.dumps(body)
        assert committed_offsets(cluster.conf, group) == {(topic, 0): 0}
        with watched(browser, base, allowed=(base,)) as w:
            assert "token" in w.page.inner_text("form")  # the login form, answered 401
            w.page.fill("input[name=token]", TOKEN)
            w.page.click("button")
            w.page.wait_for_selector("#groups")
            assert "lagless ui" in w.page.inner_text("header")
            assert [p for p in w.problems() if "401" not in p] == []


def test_writes_need_allow_writes_csrf_and_a_confirmation(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(1)
    producer = Producer(cluster.conf)
    for i in range(5):
        producer.produce(topic, b"%d" % i)
    producer.flush(10)
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 1})
    with console(tmp_path / "home", cluster.bootstrap, tmp_path, "--allow-writes") as (base, _):
        page = request(base)[1]
        csrf = re.search(r"name='csrf-token' content='([0-9a-f]+)'", page)
        assert csrf is not None
        url = base.rstrip("/") + f"/group/{quote(group, safe='')}/reset-offsets"
        fields = {"topic": topic, "to": "latest"}
        no_csrf = request(url, "POST", urlencode({**fields, "confirm": "yes"}).encode())
        assert no_csrf[0] == 403 and committed_offsets(cluster.conf, group) == {(topic, 0): 1}
        preview = request(url, "POST", urlencode({**fields, "csrf": csrf.group(1)}).encode())
        assert preview[0] == 200 and "id='confirm'" in preview[1]
        assert committed_offsets(cluster.conf, group) == {(topic, 0): 1}  # nothing changed yet
        confirmed = urlencode({**fields, "csrf": csrf.group(1), "confirm": "yes"})
        done = request(url, "POST", confirmed.encode())
        assert done[0] == 200, done[1]
        assert committed_offsets(cluster.conf, group) == {(topic, 0): 5}
        # a group deleted (confirmed) disappears from the console at the next cycle
        gone = base.rstrip("/") + f"/group/{quote(group, safe='')}/delete"
        request(gone, "POST", urlencode({"csrf": csrf.group(1), "confirm": "yes"}).encode())
        poll(lambda: request(base.rstrip("/") + f"/api/groups/{group}")[0] == 404, 30,
             "the deleted group gone from the API")  # fmt: skip
        assert group not in {g["group"] for g in api(base, "/api/groups?limit=1000")}


@pytest.mark.slow
def test_frozen_broker_shows_unreachable_and_recovers(tmp_path: Path, browser: Browser) -> None:
    broker = EmbeddedBroker(tmp_path / "broker")
    state = broker.start(port=free_port())
    try:
        with console(tmp_path / "home", state.bootstrap, tmp_path) as (base, _ui):
            poll(lambda: api(base, "/api/cluster")["up"], 30, "the cluster up")
            with watched(browser, base, allowed=(base,)) as w:
                page = w.page
                os.kill(state.pid, signal.SIGSTOP)
                try:
                    down = poll(lambda: (c := api(base, "/api/cluster"))["up"] is False and c,
                                30, "the cluster seen unreachable")  # fmt: skip
                    assert down["down_since"] is not None
                    poll(lambda: "cluster unreachable since" in page.inner_text("#cluster"), 15,
                         "the banner")  # fmt: skip
                    time.sleep(max(0.0, 10 - 1))
                finally:
                    os.kill(state.pid, signal.SIGCONT)
                poll(lambda: api(base, "/api/cluster")["up"], 60, "the sampler resumed")
                poll(lambda: "unreachable" not in page.inner_text("#cluster"), 15, "banner back")
    finally:
        broker.stop()
