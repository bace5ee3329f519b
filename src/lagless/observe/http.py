"""The HTTP endpoint of a run: Prometheus metrics plus Kubernetes-style probes.

* ``/metrics`` (and any other path) — the registry in Prometheus' text format;
* ``/healthz`` — 200 while the process is alive (the engine's poll loop turns), else 503;
* ``/readyz`` — 200 once ready (the engine owns partitions and consumes), else 503;
* ``/status`` — the instance's owned partitions and where it is in them, as JSON
  (:mod:`lagless.observe.instance`; what ``lagless ui --scrape`` reads), when given: one object
  (``lagless consume``) or a list of them, one per handler (``lagless run``).

Both probes answer a small JSON object (the engine's :class:`HealthStatus`). Without a health
source (the Spark pipeline) the probes answer 200 while the server runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler

from lagless.errors import LaglessError

HealthSource = Callable[[], Any]  # returns an object with .alive, .ready and .to_json()
StatusSource = Callable[[], dict[str, Any] | list[dict[str, Any]]]  # what /status answers

StartResponse = Callable[[str, list[tuple[str, str]]], object]


def make_app(
    registry: CollectorRegistry,
    health: HealthSource | None,
    status: StatusSource | None = None,
) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/status" and status is not None:
            doc = json.dumps(status()).encode()
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(doc)))]
            )
            return [doc]
        if path not in ("/healthz", "/readyz"):
            result: Iterable[bytes] = metrics_app(environ, start_response)
            return result
        if health is None:
            ok, body = True, {"alive": True, "ready": True}
        else:
            now = health()
            ok = bool(now.alive if path == "/healthz" else now.ready)
            body = now.to_json()
        payload = json.dumps(body).encode()
        start_response(
            "200 OK" if ok else "503 Service Unavailable",
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]

    return app


def serve(
    registry: CollectorRegistry,
    port: int,
    addr: str = "127.0.0.1",
    health: HealthSource | None = None,
    status: StatusSource | None = None,
) -> WSGIServer:
    """Serve metrics and probes on ``addr:port`` from a daemon thread; ``.shutdown()`` stops it.

    A port that cannot be bound is a one-line LaglessError.
    """
    try:
        server = make_server(
            addr, port, make_app(registry, health, status), ThreadingWSGIServer,
            handler_class=_SilentHandler,
        )  # fmt: skip
    except OSError as exc:
        reason = exc.strerror or exc
        raise LaglessError(f"cannot serve metrics on {addr}:{port}: {reason}") from None
    threading.Thread(target=server.serve_forever, name="lagless-http", daemon=True).start()
    return server
