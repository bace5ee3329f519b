"""Resolve settings to a reachable cluster: the given bootstrap, or the embedded broker."""

from __future__ import annotations

import logging
from pathlib import Path

from lagless.broker.embedded import EmbeddedBroker
from lagless.config import KafkaSettings

log = logging.getLogger(__name__)


def resolve(settings: KafkaSettings, state_dir: Path | None = None) -> KafkaSettings:
    """``settings`` with a bootstrap: the embedded broker's (started if needed) when unset."""
    if settings.bootstrap is not None:
        return settings
    state = EmbeddedBroker(state_dir).ensure()
    log.info("using the embedded broker at %s", state.bootstrap)
    return settings.with_bootstrap(state.bootstrap)
