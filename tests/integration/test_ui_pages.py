"""The console's Lab and Dead letters pages in Chromium: lab runs with links and a running
lab's progress; dead letters grouped by error class, with reasons and coordinates as text; a
long group id wrapped on its page."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from confluent_kafka import Producer

from lagless.kafka.admin import alter_committed_offsets
from lagless.ui.records import PageReads, last_records
from tests.conftest import Cluster
from tests.integration.browser import watched
from tests.integration.spark_helpers.raw_produce import produce_raw_headers
from tests.integration.ui_helpers import console, poll, request

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.integration


def dead_letter(error_class: str, offset: int) -> list[tuple[str, str | bytes | None]]:
    return [
        ("lagless-dlq-error-class", error_class.encode()),
        ("lagless-dlq-error", b"bad amount <img src=x onerror=alert(1)>"),
        ("lagless-dlq-topic", b"orders"), ("lagless-dlq-partition", b"2"),
        ("lagless-dlq-offset", str(offset).encode()), ("lagless-dlq-attempts", b"3"),
    ]  # fmt: skip


def test_lab_and_dead_letter_pages(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path, browser: Browser
) -> None:
    dlq = make_topic(1)
    producer = Producer(cluster.conf)
    for i in range(6):
        klass = "ValueError" if i % 3 else "<b>KeyError</b>"
        headers = dead_letter(klass, 100 + i)
        headers.append(("lagless-dlq-stacktrace", b"Traceback:\n  line 1\n\x07ValueError"))
        producer.produce(dlq, b'{"id": %d}' % i, headers=headers)
    assert producer.flush(10) == 0
    lab = tmp_path / "lab"
    (lab / "20260101-000000" / "eager" / "i0").mkdir(parents=True)
    (lab / "20260101-000000" / "report.html").write_text("<html><body>lab page</body></html>")
    running = lab / "20260102-000000" / "cooperative" / "i1"
    running.mkdir(parents=True)
    event = {"ts": time.time(), "instance": "i1", "kind": "assigned", "partitions": [["t", 0]]}
    (running / "events.jsonl").write_text(json.dumps(event) + "\n")
    (running / "timeline.jsonl").write_text(json.dumps({"lag_records": 42, "processed": 7}) + "\n")
    args = ("--lab-dir", str(lab))
    with (
        console(tmp_path / "home", cluster.bootstrap, tmp_path, *args) as (base, _ui),
        watched(browser, base.rstrip("/") + "/lab", allowed=(base,)) as w,
    ):
        page = w.page
        runs = page.inner_text("#lab-runs")
        assert "20260101-000000" in runs and "done" in runs and "running" in runs
        progress = page.inner_text("#lab-progress")
        assert "i1" in progress and "assigned" in progress and "42" in progress
        page.click("text=20260101-000000")
        assert "lab page" in page.inner_text("body")
        # on a broker holding hundreds of topics (the suite's) the first look may not reach
        # every topic's last record in time: the page shows the topic once it is read
        poll(lambda: dlq in request(base.rstrip("/") + "/dead-letters")[1], 120, "the DLQ seen")
        page.goto(base.rstrip("/") + "/dead-letters")
        classes = page.inner_text("#dlq-classes")
        assert "ValueError\t4" in classes and "<b>KeyError</b>\t2" in classes
        letters = page.inner_text("#dlq-letters")
        assert "bad amount <img src=x onerror=alert(1)>" in letters and "orders[2]@105" in letters
        assert page.locator("img").count() == 0 and page.locator("main b").count() == 0
        # the traceback keeps its lines; other control characters are escaped
        assert (
            page.inner_text("#dlq-letters pre >> nth=0") == "Traceback:\n  line 1\n\\x07ValueError"
        )
        assert w.problems() == []


def test_a_topic_whose_last_record_was_not_read_in_time_is_not_known_either_way(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    dlq, plain = make_topic(1), make_topic(1)
    producer = Producer(cluster.conf)
    producer.produce(dlq, b"{}", headers=dead_letter("ValueError", 1))
    producer.produce(plain, b"{}")
    assert producer.flush(10) == 0
    wanted = [(dlq, 0, 0), (plain, 0, 0)]
    assert last_records(cluster.conf, wanted, timeout=0.0) == ({}, {dlq, plain})
    found, unread = last_records(cluster.conf, wanted, timeout=30.0)
    assert set(found) == {dlq} and unread == set()


def test_a_long_group_id_without_breaks_wraps_instead_of_widening_the_page(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path, browser: Browser
) -> None:
    topic = make_topic(1)
    group = "G" * 230 + str(time.time_ns())[-10:]  # 240 characters, no break
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 0})
    with console(tmp_path / "home", cluster.bootstrap, tmp_path) as (base, _ui):
        url = base.rstrip("/") + "/group/" + quote(group, safe="")
        poll(lambda: request(url)[0] == 200, 60, "the group sampled")
        with watched(browser, url, {"width": 1280, "height": 900}, allowed=(base,)) as w:
            page = w.page
            page.wait_for_selector("#group-name")
            page.wait_for_timeout(1500)  # the live parts filled in
            assert page.inner_text("#group-name") == group
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_a_record_whose_header_name_is_not_utf8_does_not_stop_the_look(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """confluent-kafka cannot read a header name that is not UTF-8 (``headers()`` fails, or
    leaves the error for a later call): such a topic is no dead-letter topic, and the look
    reads the others."""
    dlq, odd = make_topic(1), make_topic(1)
    produce_raw_headers(cluster.bootstrap, odd, [[(b"ok", b"x")], [(b"\xed\xa0\x80", b"x")]])
    producer = Producer(cluster.conf)
    producer.produce(dlq, b"{}", headers=dead_letter("ValueError", 1))
    assert producer.flush(10) == 0
    reads = PageReads(cluster.conf)  # in the reader's child, as the page reads: a crash fails
    try:
        found, unread = reads.calls.call(last_records, cluster.conf, [(odd, 0, 1), (dlq, 0, 0)])
    finally:
        reads.close()
    assert set(found) == {dlq} and unread == set()
