"""What an App reads from its environment when it runs (what a Kubernetes manifest sets).

* ``LAGLESS_METRICS_PORT``: the port of ``/metrics``, ``/healthz`` and ``/readyz``;
* ``LAGLESS_METRICS_HOST``: the address they are served on (``0.0.0.0`` in a pod);
* ``LAGLESS_STATIC_ID``: every handler's ``group.instance.id`` (a StatefulSet's pod name).

Precedence: what the caller gives (``run(metrics_port=..., metrics_host=...)``, ``lagless run
--metrics-port/--metrics-host/--static-id``, ``configured(static_id=...)``), then these
variables, then the App's code (``App(metrics_port=..., metrics_host=...)``, a handler's
``static_id``). docs/deploy.md has the table.

The connection comes from the ``LAGLESS_*`` variables of :class:`lagless.config.KafkaSettings`
(``LAGLESS_BOOTSTRAP``, ``LAGLESS_SASL_PASSWORD``, ...), as for every command. A bad value is a
one-line :class:`~lagless.errors.ConfigError` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from lagless.errors import ConfigError

METRICS_PORT = "LAGLESS_METRICS_PORT"
METRICS_HOST = "LAGLESS_METRICS_HOST"
STATIC_ID = "LAGLESS_STATIC_ID"
VARIABLES = frozenset({METRICS_PORT, METRICS_HOST, STATIC_ID})


@dataclass(frozen=True)
class AppEnvironment:
    """The App's own variables, validated (None: not set)."""

    metrics_port: int | None = None
    metrics_host: str | None = None
    static_id: str | None = None


def read(environ: Mapping[str, str] | None = None) -> AppEnvironment:
    """The App's variables from ``environ`` (the process environment by default)."""
    env = os.environ if environ is None else environ
    port_text = env.get(METRICS_PORT) or None
    port = None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"{METRICS_PORT}={port_text!r} is not a port (1-65535)")
        port = int(port_text)
    return AppEnvironment(port, env.get(METRICS_HOST) or None, env.get(STATIC_ID) or None)
