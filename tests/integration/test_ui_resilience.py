"""`lagless ui` against what breaks samplers: topics deleted while it samples, scrape targets
that answer garbage, instances that publish malformed status."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import pytest
from confluent_kafka import Producer

from lagless.kafka.admin import alter_committed_offsets, delete_topic
from tests.conftest import Cluster
from tests.integration.ui_helpers import api, console, poll, request

pytestmark = pytest.mark.integration
DELETIONS = 8
PAGE_DELETIONS = 5


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


def test_topics_deleted_while_their_pages_are_read_leave_the_console_alive(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """A topic's page and the dead-letters page fetch records: deleting the topic they read
    fails at most that page, never the console."""
    kept = make_topic(1)
    cluster.produce(kept, [b"kept-record"])
    letter = [("lagless-dlq-error-class", b"ValueError"), ("lagless-dlq-error", b"bad")]
    with console(tmp_path / "home", cluster.bootstrap, tmp_path, "--interval", "0.2") as (
        base,
        ui,
    ):
        poll(lambda: kept in ends_of(base), 60, "the kept topic sampled")
        answers: list[int] = []
        for i in range(PAGE_DELETIONS):
            doomed = make_topic(3)
            producer = Producer(cluster.conf)
            for n in range(300):
                producer.produce(doomed, b"x" * 100, partition=n % 3, headers=letter)
            assert producer.flush(10) == 0
            poll(lambda: ends_of(base).get(doomed) == 300, 30, f"topic {i} sampled")  # noqa: B023
            done = threading.Event()

            def browse(topic: str = doomed, done: threading.Event = done) -> None:
                while not done.is_set():
                    for path in ("/topic/" + quote(topic, safe=""), "/dead-letters"):
                        answers.append(request(base.rstrip("/") + path)[0])

            readers = [threading.Thread(target=browse) for _ in range(2)]
            for reader in readers:
                reader.start()
            time.sleep(0.3 + 0.3 * i)  # the deletion falls at another moment each time
            delete_topic(cluster.conf, doomed, 15.0)
            time.sleep(1.0)
            done.set()
            for reader in readers:
                reader.join(120)
            assert ui.proc.poll() is None, f"lagless ui died: {ui.err()[-2000:]}"
        assert answers and set(answers) <= {200, 404}, sorted(set(answers))
        status, body, _ = request(base.rstrip("/") + "/topic/" + quote(kept, safe=""))
        assert status == 200 and "kept-record" in body
        assert ui.proc.poll() is None


class StatusHandler(http.server.BaseHTTPRequestHandler):
    """An instance whose ``/status`` holds a malformed figure (set by the test)."""

    doc: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        body = json.dumps(self.doc).encode() if self.path == "/status" else b""
        self.send_response(200 if self.path == "/status" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        del args


def test_a_malformed_instance_status_leaves_the_group_page_answering(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(2)
    cluster.produce(topic, [b"x"] * 4)
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 1, (topic, 1): 0})
    StatusHandler.doc = [
        {"group": group, "client_id": "c1", "partitions": [
            {"topic": topic, "partition": 0, "since": "not a time", "position": 1},
            {"topic": topic, "partition": 1, "since": 1700000000.0, "position": 0},
        ]},
    ]  # fmt: skip
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StatusHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = f"127.0.0.1:{server.server_address[1]}"
    try:
        with console(tmp_path / "home", cluster.bootstrap, tmp_path, "--scrape", target) as (
            base,
            _ui,
        ):
            path = "/api/groups/" + quote(group, safe="")
            doc = poll(lambda: (r := request(base.rstrip("/") + path))[0] == 200 and r[1], 60,
                       "the group")  # fmt: skip
            doc = poll(lambda: (d := api(base, path))["instances"] and d, 30, "its instance")
            since = {p["partition"]: p["since"] for p in doc["partitions"]}
            assert since == {0: None, 1: "2023-11-14T22:13:20.000Z"}
            errors = api(base, "/api/cluster")["scrape_errors"]
            assert "since malformed" in errors[target]
            status, page, _ = request(base.rstrip("/") + "/group/" + quote(group, safe=""))
            assert status == 200 and group in page
    finally:
        server.shutdown()
