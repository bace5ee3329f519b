"""An app that copies SOURCE to OUT, taking SLEEP_MS per record (all from the environment);
with LAGLESS_TEST_BATCH=N a batch handler copies batches of up to N records instead, taking
SLEEP_MS per batch."""

from __future__ import annotations

import os
import time

import lagless

SLEEP_S = float(os.environ.get("LAGLESS_TEST_SLEEP_MS", "20")) / 1000
BATCH = int(os.environ.get("LAGLESS_TEST_BATCH", "0"))
app = lagless.App(group=os.environ.get("LAGLESS_TEST_GROUP", "copier"))
on = app.handler(
    os.environ.get("LAGLESS_TEST_SOURCE", "copier-in"),
    output=os.environ.get("LAGLESS_TEST_OUT", "copier-out"),
    ordering="unordered",
    max_in_flight=50,
    on_failure="stop",
    value=str,
    **({"batch_size": BATCH, "batch_linger_ms": 20} if BATCH else {}),
)


if BATCH:

    @on
    def copy(texts: list[str]) -> list[str]:
        time.sleep(SLEEP_S)
        return texts

else:

    @on
    def copy(text: str) -> str:
        time.sleep(SLEEP_S)
        return text
