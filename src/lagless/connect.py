"""Resolve settings to a reachable cluster: the given bootstrap, or the embedded broker.

The fallback is never silent: :func:`resolve` returns a one-line note saying which cluster is
used and why, and the CLI prints it on stderr.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from lagless.broker.embedded import EmbeddedBroker
from lagless.config import KafkaSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resolved:
    """Settings with a bootstrap, and the note to print when it is the embedded broker's."""

    settings: KafkaSettings
    fallback_note: str | None


def resolve(
    settings: KafkaSettings, state_dir: Path | None = None, port: int | None = None
) -> Resolved:
    """``settings`` with a bootstrap: the embedded broker's (started if needed, on ``port``
    when given) when none is configured."""
    if settings.bootstrap is not None:
        return Resolved(settings, None)
    broker = EmbeddedBroker(state_dir)
    running = broker.read_state()
    state = broker.ensure(port)
    verb = "started" if running is None or running.pid != state.pid else "using"
    note = (
        f"no cluster configured (-b, LAGLESS_BOOTSTRAP or a config file): {verb} the embedded "
        f"broker at {state.bootstrap} (state in {broker.state_dir})"
    )
    log.info("%s", note)
    return Resolved(settings.with_bootstrap(state.bootstrap), note)
