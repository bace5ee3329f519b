"""An instance's status file: written every second, dropped when its process is gone or it
has been silent for 3 s, removed at stop."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lagless.observe.instance import (
    STALE_S,
    PartitionView,
    Publisher,
    StatusBoard,
    instances_dir,
    live_instances,
)


def test_a_board_publishes_its_partitions_and_leaves_at_stop(tmp_path: Path) -> None:
    board = StatusBoard("g<1>", "c1", "http://127.0.0.1:9")
    board.post([PartitionView("t", 0, 3, 10, 8, 12, 2, False)], in_flight=2, paused=0)
    with Publisher(board, tmp_path) as publisher:
        found = live_instances(tmp_path)
        assert [d["group"] for d in found] == ["g<1>"]
        part = found[0]["partitions"][0]
        assert part["generation"] == 3 and part["position"] == 10
        assert part["first_unfinished"] == 8 and part["since"] is not None
        assert publisher.path.exists()
    assert not publisher.path.exists() and live_instances(tmp_path) == []


def test_silent_or_gone_instances_are_dropped(tmp_path: Path) -> None:
    board = StatusBoard("g", "c1")
    publisher = Publisher(board, tmp_path)
    publisher.path.parent.mkdir(parents=True)
    publisher.write()
    doc = json.loads(publisher.path.read_text())
    assert live_instances(tmp_path, now=doc["updated"] + STALE_S - 0.5)
    assert live_instances(tmp_path, now=doc["updated"] + STALE_S + 0.5) == []  # silent
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead = instances_dir(tmp_path) / "dead.json"
    dead.write_text(json.dumps({**doc, "pid": int(gone.stdout)}))
    live_instances(tmp_path, now=doc["updated"])
    assert not dead.exists()  # its process is gone: the file is removed


def test_an_unwritable_state_directory_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with Publisher(StatusBoard("g", "c1"), blocker) as publisher:  # a file, not a directory
        assert not publisher.path.exists()


@dataclass(frozen=True)
class EnginePartition:  # the shape of lagless.engine's PartitionStatus
    topic: str
    partition: int
    epoch: int
    assigned_at: float
    position: int | None
    first_unfinished: int | None
    in_flight: int
    paused: bool


@dataclass(frozen=True)
class EngineStatus:
    partitions: tuple[EnginePartition, ...]
    in_flight: int


def test_a_board_can_follow_an_engines_status() -> None:
    board = StatusBoard("g", "c1")
    board.follow(lambda: EngineStatus((EnginePartition("t", 1, 2, 1234.5, 7, 6, 1, True),), 1))
    doc = board.to_json()
    assert doc["paused"] == 1 and doc["in_flight"] == 1
    assert doc["partitions"] == [{
        "topic": "t", "partition": 1, "generation": 2, "position": 7, "first_unfinished": 6,
        "end": None, "in_flight": 1, "paused": True, "since": 1234.5,
    }]  # fmt: skip
