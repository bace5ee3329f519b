"""The console's reading of instances' ``/status``: one object (`lagless consume`) or a list of
them, one per handler (`lagless run`); each handler's figures from its own ``/metrics`` samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lagless.observe.instance import PartitionView, Publisher, StatusBoard
from lagless.ui.scrape import Instances, status_objects

TARGET = "10.0.0.7:9400"


def handler_doc(handler: str | None, group: str, topic: str, parts: list[int]) -> dict[str, Any]:
    board = StatusBoard(group, f"host-1-{handler}", "http://127.0.0.1:9400", topics=[topic],
                        handler=handler)  # fmt: skip
    board.post([PartitionView(topic, p, 1, 10 + p, 9 + p, None, 1, False) for p in parts],
               in_flight=len(parts), paused=0)  # fmt: skip
    return board.to_json()


def metrics_text(dlq_first: int, dlq_second: int) -> str:
    return (
        "# TYPE lagless_dlq_records_total counter\n"
        f'lagless_dlq_records_total{{group="ga",handler="first"}} {dlq_first}\n'
        f'lagless_dlq_records_total{{group="gb",handler="second"}} {dlq_second}\n'
        "# TYPE lagless_in_flight gauge\n"
        'lagless_in_flight{group="ga",handler="first"} 3\n'
        'lagless_in_flight{group="gb",handler="second"} 40\n'
    )


class Remote:
    """What one `lagless run` process answers over HTTP (the URLs asked are kept)."""

    def __init__(self, status: Any) -> None:
        self.status = status
        self.metrics = metrics_text(0, 0)
        self.asked: list[str] = []

    def __call__(self, url: str) -> str:
        self.asked.append(url)
        if url == f"http://{TARGET}/status":
            return json.dumps(self.status)
        if url == f"http://{TARGET}/metrics":
            return self.metrics
        raise OSError(f"connection refused: {url}")


def test_a_list_shows_every_handler_in_its_group(tmp_path: Path) -> None:
    remote = Remote([handler_doc("first", "ga", "ta", [0, 1, 2]),
                     handler_doc("second", "gb", "tb", [0, 1])])  # fmt: skip
    instances = Instances(tmp_path, [TARGET], fetcher=remote)
    docs = instances.look()
    assert [(d["handler"], d["group"], d["topics"]) for d in docs] == [
        ("first", "ga", ["ta"]), ("second", "gb", ["tb"])]  # fmt: skip
    # the metrics are read where /status answered, not at the loopback URL the instance names
    assert {d["metrics"] for d in docs} == {f"http://{TARGET}"}
    assert {d["source"] for d in docs} == {TARGET}
    first = instances.of_group("ga")
    assert [d["handler"] for d in first] == ["first"]
    assert [(p["partition"], p["position"]) for p in first[0]["partitions"]] == [
        (0, 10), (1, 11), (2, 12)]  # fmt: skip
    assert [d["handler"] for d in instances.of_group("gb")] == ["second"]
    # /metrics once per look for both handlers; each handler's figures from its own samples
    assert remote.asked.count(f"http://{TARGET}/metrics") == 1
    remote.metrics = metrics_text(0, 50)
    instances.look()
    (a,), (b,) = instances.points("ga"), instances.points("gb")
    assert (a.in_flight, a.dlq_rate) == (3, 0.0)
    assert b.in_flight == 40 and b.dlq_rate > 0
    assert remote.asked.count(f"http://{TARGET}/metrics") == 2


def test_one_object_is_the_consume_shape(tmp_path: Path) -> None:
    doc = handler_doc(None, "gc", "tc", [0])
    instances = Instances(tmp_path, [TARGET], fetcher=Remote(doc))
    (seen,) = instances.look()
    assert seen["group"] == "gc" and seen["handler"] is None and seen["source"] == TARGET


def test_answers_that_are_no_status_are_left_out() -> None:
    assert status_objects(42) is None and status_objects("x") is None
    assert status_objects([1, {"group": 3, "partitions": []}, {"group": "g"}]) == []
    parts = [{"topic": "t", "partition": 0}, {"topic": "t"}, "p", {"topic": 1, "partition": 2}]
    (doc,) = status_objects({"group": "g", "client_id": "c", "partitions": parts}) or [{}]
    assert doc["partitions"] == [{"topic": "t", "partition": 0}]


def test_malformed_figures_drop_their_partition_with_the_reason() -> None:
    parts = [
        {"topic": "t", "partition": 0, "since": "yesterday"},
        {"topic": "t", "partition": 1, "since": 1.5, "position": [], "generation": True},
        {"topic": "t", "partition": 2, "since": 1700000000.5, "position": 4, "in_flight": None},
    ]
    problems: list[str] = []
    docs = [{"group": "g", "client_id": "c", "partitions": parts}, {"group": "g", "pid": 1}]
    (doc,) = status_objects(docs, problems) or [{}]
    assert [p["partition"] for p in doc["partitions"]] == [2]
    assert problems == [
        "instance 'c': partition t[0] left out (since malformed)",
        "instance 'c': partition t[1] left out (position, generation malformed)",
        "an instance of group 'g' without a client id or a partition list left out",
    ]


def test_a_remote_answer_that_is_no_status_shows_nothing(tmp_path: Path) -> None:
    assert Instances(tmp_path, [TARGET], fetcher=Remote("not a status")).look() == []
    assert Instances(tmp_path, [TARGET], fetcher=Remote([{"x": 1}])).look() == []


def test_a_local_instance_also_scraped_is_shown_once(tmp_path: Path) -> None:
    board = StatusBoard("gl", "c1", topics=["t"], handler="first")
    with Publisher(board, tmp_path):
        remote = Remote([board.to_json()])
        docs = Instances(tmp_path, [TARGET], fetcher=remote).look()
    assert [(d["handler"], d["source"]) for d in docs] == [("first", "local")]
