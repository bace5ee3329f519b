"""What an engine instance publishes about itself: owned partitions and where it is in them.

An engine given a :class:`StatusBoard` posts a view of its partitions about twice a second (from
its poll thread). The board keeps the latest and serves it two ways:

* **locally**, through a small JSON file per instance in the per-user state directory
  (``instances/<pid>-<hash>.json``), rewritten every second by :class:`Publisher` and removed
  at stop; :func:`live_instances` reads them and drops any whose process is gone or whose file
  is older than ``STALE_S`` (a frozen or killed process);
* **remotely**, as the JSON ``/status`` endpoint beside ``/metrics``
  (:func:`lagless.observe.http.serve`): one object for ``lagless consume``, a list of them
  (one per handler) for ``lagless run`` / an App (:mod:`lagless.app.runner`).

Each object names its ``group``, ``topics`` and ``handler`` (the App's handler name; ``null`` for
``lagless consume``), so one process may publish several groups.

Per partition: ``generation`` (this instance's assignment count when it got the partition: the
broker's generation id is not exposed to clients), ``since`` (wall time it was first seen
owned, to the board's resolution), ``position`` (the offset the next poll returns),
``first_unfinished`` (what the next commit stores), ``end`` (the high watermark it last saw),
``in_flight`` and ``paused``. ``lagless ui`` reads both to know the owners where the broker does
not answer DescribeGroups with members.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lagless.broker.embedded import pid_alive

log = logging.getLogger(__name__)

INSTANCES_DIR = "instances"
PUBLISH_EVERY_S = 1.0
STALE_S = 3.0


@dataclass(frozen=True)
class PartitionView:
    """One owned partition, as the engine sees it."""

    topic: str
    partition: int
    generation: int
    position: int | None
    first_unfinished: int | None
    end: int | None
    in_flight: int
    paused: bool


def metrics_url(host: str, port: int | None) -> str | None:
    """Where metrics served on ``host:port`` are read from on this machine (loopback for a
    wildcard address); None without a port."""
    if port is None:
        return None
    loopback = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{loopback}]:{port}" if ":" in loopback else f"http://{loopback}:{port}"


class StatusBoard:
    """The latest view of one instance (thread-safe: the engine posts, readers copy)."""

    def __init__(
        self,
        group: str,
        client_id: str,
        metrics_url: str | None = None,
        *,
        topics: Sequence[str] = (),
        handler: str | None = None,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self.metrics_url = metrics_url
        self.topics = list(topics)
        self.handler = handler  # the App's handler name; None for lagless consume
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.started = time.time()
        self._lock = threading.Lock()
        self._partitions: tuple[PartitionView, ...] = ()
        self._since: dict[tuple[str, int, int], float] = {}
        self._in_flight = 0
        self._paused = 0
        self._updated = time.time()
        self._source: Callable[[], Any] | None = None

    def post(
        self,
        partitions: list[PartitionView],
        in_flight: int,
        paused: int,
        since: dict[tuple[str, int, int], float] | None = None,
    ) -> None:
        """The engine's current partitions (pushed from its poll thread, or pulled by
        :meth:`follow`); ``since``: when each (topic, partition, generation) was assigned, when
        the engine knows (else the first post that showed it)."""
        now = time.time()
        with self._lock:
            keys = {(p.topic, p.partition, p.generation) for p in partitions}
            known = since or {}
            self._since = {k: known.get(k, self._since.get(k, now)) for k in keys}
            self._partitions = tuple(partitions)
            self._in_flight = in_flight
            self._paused = paused
            self._updated = now

    def follow(self, source: Callable[[], Any]) -> None:
        """Pull the status from ``source`` (an engine's ``status()``: ``.partitions`` with
        topic, partition, epoch, assigned_at, position, first_unfinished, in_flight, paused;
        and ``.in_flight``) whenever the board is read, instead of being posted to."""
        self._source = source

    def _pull(self) -> None:
        if self._source is None:
            return
        status = self._source()
        parts = list(status.partitions)
        views = [
            PartitionView(p.topic, p.partition, p.epoch, p.position, p.first_unfinished, None,
                          p.in_flight, p.paused)
            for p in parts
        ]  # fmt: skip
        since = {(p.topic, p.partition, p.epoch): p.assigned_at for p in parts}
        self.post(views, status.in_flight, sum(1 for p in parts if p.paused), since)

    def to_json(self) -> dict[str, Any]:
        self._pull()
        with self._lock:
            parts = [
                {**asdict(p), "since": self._since.get((p.topic, p.partition, p.generation))}
                for p in self._partitions
            ]
            return {
                "instance": self.client_id,
                "group": self.group,
                "topics": self.topics,
                "handler": self.handler,
                "client_id": self.client_id,
                "pid": self.pid,
                "host": self.host,
                "metrics": self.metrics_url,
                "started": self.started,
                "updated": time.time(),
                "posted": self._updated,
                "in_flight": self._in_flight,
                "paused": self._paused,
                "partitions": parts,
            }


def instances_dir(state_dir: Path) -> Path:
    return state_dir / INSTANCES_DIR


def status_path(state_dir: Path, board: StatusBoard) -> Path:
    key = f"{board.group}\0{board.client_id}\0{board.handler or ''}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return instances_dir(state_dir) / f"{board.pid}-{digest}.json"


class Publisher:
    """Rewrites the board's file every second from a daemon thread; removes it at stop."""

    def __init__(self, board: StatusBoard, state_dir: Path) -> None:
        self.board = board
        self.path = status_path(state_dir, board)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lagless-status", daemon=True)

    def start(self) -> Publisher:
        """Start publishing; a state directory that cannot be written is said once (the
        console then cannot see this instance) and is no error for the engine."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("instance status not published (lagless ui will not see it): %s", exc)
            return self
        self.write()
        self._thread.start()
        return self

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.board.to_json()))
            os.replace(tmp, self.path)
        except OSError as exc:
            log.info("cannot write instance status %s: %s", self.path, exc)

    def _run(self) -> None:
        while not self._stop.wait(PUBLISH_EVERY_S):
            self.write()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
        with contextlib.suppress(OSError):  # never written (see start)
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> Publisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def live_instances(state_dir: Path, now: float | None = None) -> list[dict[str, Any]]:
    """The status of every local instance that is alive and wrote within ``STALE_S`` seconds;
    files of processes that are gone are removed."""
    now = time.time() if now is None else now
    out = []
    folder = instances_dir(state_dir)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid = doc.get("pid")
        if not isinstance(pid, int) or not pid_alive(pid):
            path.unlink(missing_ok=True)
            continue
        if now - float(doc.get("updated", 0)) > STALE_S:
            continue
        out.append(doc)
    return out
