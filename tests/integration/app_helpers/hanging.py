"""An app whose batch handler (batches of one) notes each value in ``$LAGLESS_TEST_LEDGER`` at
once, until it is called on its engine's own thread (its poll thread: see
lagless.engine.inline); then it notes ``hang`` and never returns. Every measured call counts
as fast here (the threshold is unit-tested): a loaded machine cannot keep them off it."""

from __future__ import annotations

import os
import threading
import time

import lagless
from lagless.engine import inline

inline.INLINE_CALL_S = 10.0
inline.BUSY_SHARE = 0.0

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
    line = b"hang\n" if hangs else b"".join(v + b"\n" for v in values)
    fd = os.open(os.environ["LAGLESS_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    if hangs:
        time.sleep(600)
