"""An app whose batch handler (batches of one) notes each value in ``$LAGLESS_TEST_LEDGER`` at
once, until it is called on its engine's own thread (its poll thread: see
lagless.engine.workers.inline); then it notes ``hang`` and never returns. Every measured call counts
as fast here (see engine_helpers.poll_thread): a loaded machine cannot keep them off it."""

from __future__ import annotations

import os
import threading

import lagless
from tests.integration.engine_helpers.poll_thread import note_or_hang  # every call counts fast

app = lagless.App(
    group=os.environ.get("LAGLESS_TEST_GROUP", "hanging"),
    session_timeout_ms=6000,
    heartbeat_interval_ms=1500,
)


@app.handler(
    os.environ.get("LAGLESS_TEST_SOURCE", "hanging-in"),
    batch_size=1,
    ordering="unordered",
    on_failure="stop",
)
def note(values: list[bytes]) -> None:
    hangs = threading.current_thread().name.startswith("lagless-app-")
    note_or_hang(b"hang\n" if hangs else b"".join(v + b"\n" for v in values), hangs)
