"""Control of a mock cluster held by another process: topics, RTT, group settings, brokers.

The process holding a mock cluster (``python -m lagless.broker.mock``) serves its
:class:`~lagless.broker.mockapi.MockApi` on a control port (127.0.0.1, JSON lines: one request
``{"op": ..., ...}``, one answer ``{"ok": true, ...}`` or ``{"error": "..."}``) and registers it
under each of its brokers' addresses in a per-user directory of the temp dir. Any process on the
host that knows the bootstrap finds the control there (:func:`mock_control`): that is how
``lagless topic create`` creates a topic of any partition count on the mock, which has no
CreateTopics over the protocol.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lagless.broker.embedded import pid_alive
from lagless.broker.mockapi import MockApi
from lagless.errors import ClusterError

Request = dict[str, Any]


def registry_dir() -> Path:
    """Where holders register their controls (per user, in the temp dir)."""
    return Path(tempfile.gettempdir()) / f"lagless-mock-{os.getuid()}"


def _entry(address: str) -> Path:
    return registry_dir() / (address.strip().replace(":", "_") + ".json")


def register(bootstrap: str, control_port: int) -> None:
    """Register this process's control under each broker address of ``bootstrap``."""
    registry_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    doc = json.dumps({"pid": os.getpid(), "control": control_port, "bootstrap": bootstrap})
    for address in bootstrap.split(","):
        _entry(address).write_text(doc, encoding="utf-8")


def unregister(bootstrap: str) -> None:
    for address in bootstrap.split(","):
        _entry(address).unlink(missing_ok=True)


def _handlers(api: MockApi) -> dict[str, Callable[[Request], Any]]:
    return {
        "create_topic": lambda r: api.create_topic(
            str(r["topic"]), int(r["partitions"]), exist_ok=bool(r.get("exist_ok"))
        ),
        "delete_topic": lambda r: api.delete_topic(str(r["topic"])),
        "set_rtt": lambda r: api.set_rtt(int(r["rtt_ms"]), r.get("broker")),
        "set_down": lambda r: api.set_down(int(r["broker"])),
        "set_up": lambda r: api.set_up(int(r["broker"])),
        "set_rebalance_delay": lambda r: api.set_rebalance_delay(int(r["delay_ms"])),
        "set_consumer_session": lambda r: api.set_consumer_session(
            r.get("session_ms"), r.get("heartbeat_ms")
        ),
    }


class ControlServer(socketserver.ThreadingTCPServer):
    """Serves ``api`` on 127.0.0.1:``port`` (0: any free port) in a daemon thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, api: MockApi, port: int = 0) -> None:
        self.handlers = _handlers(api)
        super().__init__(("127.0.0.1", port), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, name="lagless-mock-control")
        self.thread.daemon = True

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def answer(self, request: Request) -> dict[str, Any]:
        handler = self.handlers.get(str(request.get("op")))
        if handler is None:
            return {"error": f"unknown op {request.get('op')!r}: one of {', '.join(self.handlers)}"}
        try:
            return {"ok": True, "result": handler(request)}
        except (ClusterError, KeyError, TypeError, ValueError) as exc:
            return {"error": str(exc)}


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, ControlServer)
        for line in self.rfile:
            try:
                request = json.loads(line)
                answer = (
                    server.answer(request)
                    if isinstance(request, dict)
                    else {"error": "a request is a JSON object"}
                )
            except ValueError as exc:
                answer = {"error": f"not JSON: {exc}"}
            self.wfile.write(json.dumps(answer).encode() + b"\n")


@dataclass(frozen=True)
class MockControl:
    """A client of one holder's control port."""

    port: int
    bootstrap: str
    timeout: float = 30.0

    def request(self, op: str, **args: Any) -> Any:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout) as sock:
                sock.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
                answer = json.loads(sock.makefile("rb").readline() or b"{}")
        except (OSError, ValueError) as exc:
            raise ClusterError(f"the mock cluster's control did not answer: {exc}") from None
        if "error" in answer or not answer.get("ok"):
            raise ClusterError(str(answer.get("error", "the mock cluster's control failed")))
        return answer.get("result")

    def create_topic(self, topic: str, partitions: int, *, exist_ok: bool = False) -> bool:
        return bool(self.request("create_topic", topic=topic, partitions=partitions,
                                 exist_ok=exist_ok))  # fmt: skip

    def delete_topic(self, topic: str) -> None:
        self.request("delete_topic", topic=topic)


def find_control(bootstrap: str) -> MockControl | None:
    """The control of the live holder of a mock cluster at ``bootstrap`` (None if none)."""
    for address in bootstrap.split(","):
        path = _entry(address)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        pid = int(doc.get("pid", 0)) if isinstance(doc, dict) else 0
        if pid > 0 and pid_alive(pid):
            return MockControl(int(doc["control"]), str(doc.get("bootstrap", bootstrap)))
    return None


def mock_control(conf: Mapping[str, Any]) -> MockControl | None:
    """The control of the mock cluster ``conf`` connects to (None: not a mock held here)."""
    bootstrap = str(conf.get("bootstrap.servers", ""))
    return find_control(bootstrap) if bootstrap else None
