"""Health of an app: is every poll loop turning (alive), is every handler consuming (ready)?

Each handler's engine reports a :class:`~lagless.engine.Progress` about twice a second from its
poll loop; :class:`Health` keeps the last one per handler.

* **alive** (``/healthz``): every running engine reported within ``ALIVE_WITHIN_S`` (a poll
  loop stuck for longer — a deadlock, a handler holding the loop — fails the probe; a rebalance
  callback waits at most ``revoke_budget_s``, 5 s by default, so it never does).
* **ready** (``/readyz``): every handler's engine is running, has joined its group and holds at
  least one partition. A member of a group with more members than partitions holds none and is
  reported not ready, which is what a rolling deploy should see.

:func:`serve` exposes both plus the Prometheus metrics of every handler (each sample labelled
``handler``) on one port: what a Kubernetes liveness/readiness probe and Prometheus call.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from lagless.engine import Progress
from lagless.errors import LaglessError

ALIVE_WITHIN_S = 10.0


@dataclass(frozen=True, slots=True)
class HandlerHealth:
    """What one handler's engine last said."""

    running: bool
    beat: float  # time.monotonic() of the last report
    assigned: int
    processed: int
    in_flight: int


class Health:
    """Thread-safe store of every handler's last report."""

    def __init__(self, names: Iterable[str], alive_within_s: float = ALIVE_WITHIN_S) -> None:
        now = time.monotonic()
        self.alive_within_s = alive_within_s
        self._lock = threading.Lock()
        self._state = {name: HandlerHealth(False, now, 0, 0, 0) for name in names}

    def reporter(self, name: str) -> Callable[[Progress], None]:
        """The engine's ``on_progress`` for handler ``name``."""

        def report(p: Progress) -> None:
            with self._lock:
                self._state[name] = HandlerHealth(
                    True, time.monotonic(), p.assigned, p.processed, p.in_flight
                )

        return report

    def started(self, name: str) -> None:
        with self._lock:
            self._state[name] = HandlerHealth(True, time.monotonic(), 0, 0, 0)

    def stopped(self, name: str) -> None:
        with self._lock:
            old = self._state[name]
            self._state[name] = HandlerHealth(False, old.beat, 0, old.processed, 0)

    def snapshot(self) -> dict[str, HandlerHealth]:
        with self._lock:
            return dict(self._state)

    def alive(self) -> bool:
        now = time.monotonic()
        return all(
            h.running and now - h.beat <= self.alive_within_s for h in self.snapshot().values()
        )

    def ready(self) -> bool:
        return self.alive() and all(h.assigned > 0 for h in self.snapshot().values())

    def to_json(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "alive": self.alive(),
            "ready": self.ready(),
            "handlers": {
                name: {
                    "running": h.running,
                    "seconds_since_beat": round(now - h.beat, 3),
                    "assigned": h.assigned,
                    "processed": h.processed,
                    "in_flight": h.in_flight,
                }
                for name, h in self.snapshot().items()
            },
        }


class LabelledCollector(Collector):
    """The metrics of several registries as one, each sample labelled ``label=name``."""

    def __init__(self, registries: Mapping[str, CollectorRegistry], label: str = "handler"):
        self._registries = dict(registries)
        self._label = label

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for name, registry in self._registries.items():
            for family in registry.collect():
                merged = families.get(family.name)
                if merged is None:
                    merged = Metric(family.name, family.documentation, family.type, family.unit)
                    families[family.name] = merged
                for s in family.samples:
                    labels = {**s.labels, self._label: name}
                    merged.add_sample(s.name, labels, s.value, s.timestamp, s.exemplar)
        yield from families.values()


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes every few seconds: no access log on stderr."""


def health_app(health: Health, registry: CollectorRegistry) -> Callable[..., Iterable[bytes]]:
    """The WSGI app: /metrics, /healthz, /readyz (200 or 503, a JSON body), else 404."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [generate_latest(registry)]
        if path in ("/healthz", "/readyz"):
            ok = health.alive() if path == "/healthz" else health.ready()
            body = json.dumps(health.to_json(), sort_keys=True).encode()
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "application/json")])
            return [body]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"try /metrics, /healthz or /readyz\n"]

    return app


def serve(
    port: int, health: Health, registries: Mapping[str, CollectorRegistry], addr: str = "127.0.0.1"
) -> WSGIServer:
    """Serve /metrics, /healthz and /readyz on ``addr:port`` from a daemon thread.

    Returns the server (``.shutdown()`` then ``.server_close()`` stop it); a port that cannot
    be bound is a one-line LaglessError.
    """
    registry = CollectorRegistry()
    registry.register(LabelledCollector(registries))
    try:
        server = make_server(addr, port, health_app(health, registry), handler_class=_Quiet)
    except OSError as exc:
        raise LaglessError(f"cannot serve on {addr}:{port}: {exc.strerror or exc}") from None
    thread = threading.Thread(target=server.serve_forever, name="lagless-health", daemon=True)
    thread.start()
    return server
