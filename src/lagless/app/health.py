"""Health of an app: the engines' own health, every handler at once.

Each handler's engine keeps a :class:`~lagless.engine.Health` (alive: its poll loop turned in
the last 10 s; ready: joined, owns partitions, consuming). The app is

* **alive** (``/healthz``) when every handler's engine runs and is alive;
* **ready** (``/readyz``) when every handler's engine is ready. A member of a group with more
  members than partitions owns none and is reported not ready, which is what a rolling deploy
  should see.

:func:`serve` puts both beside the Prometheus metrics of every handler (each sample labelled
``handler``) on one port, through :mod:`lagless.observe.http`, with ``/status``: a list of every
handler's status (:class:`lagless.observe.instance.StatusBoard`), what ``lagless ui --scrape``
reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from lagless.engine import HealthStatus
from lagless.observe.http import serve as serve_http
from lagless.observe.instance import StatusBoard

LOCALHOST = "127.0.0.1"  # where metrics and probes are served unless told otherwise


@dataclass(frozen=True)
class AppHealth:
    """Every handler's engine health; ``running`` says which engines still run."""

    handlers: dict[str, HealthStatus]
    running: dict[str, bool] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return all(self.running.get(n, False) and h.alive for n, h in self.handlers.items())

    @property
    def ready(self) -> bool:
        return self.alive and all(h.ready for h in self.handlers.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "alive": self.alive,
            "ready": self.ready,
            "handlers": {
                name: {**h.to_json(), "running": self.running.get(name, False)}
                for name, h in self.handlers.items()
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


def serve(
    host: str,
    port: int,
    health: Callable[[], AppHealth],
    registries: Mapping[str, CollectorRegistry],
    boards: Mapping[str, StatusBoard] | None = None,
) -> WSGIServer:
    """/metrics (every handler's, labelled), /healthz, /readyz and, given ``boards``, /status
    (one object per handler) on ``host:port``."""
    registry = CollectorRegistry()
    registry.register(LabelledCollector(registries))
    held = dict(boards or {})
    status = (lambda: [b.to_json() for b in held.values()]) if held else None
    return serve_http(registry, port, host, health=health, status=status)
