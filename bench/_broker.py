"""Shared by the benchmarks: LAGLESS_BOOTSTRAP, or a fresh embedded broker on a free port."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lagless.broker.embedded import EmbeddedBroker, free_port


@contextmanager
def bench_cluster() -> Iterator[tuple[str, bool]]:
    """Yield (bootstrap, embedded)."""
    external = os.environ.get("LAGLESS_BOOTSTRAP")
    if external:
        yield external, False
        return
    with tempfile.TemporaryDirectory(prefix="lagless-bench-") as tmp:
        broker = EmbeddedBroker(Path(tmp))
        state = broker.start(port=free_port())
        try:
            yield state.bootstrap, True
        finally:
            broker.stop()
