"""An app that copies SOURCE to OUT, taking SLEEP_MS per record (all from the environment)."""

from __future__ import annotations

import os
import time

import lagless

SLEEP_S = float(os.environ.get("LAGLESS_TEST_SLEEP_MS", "20")) / 1000
app = lagless.App(group=os.environ.get("LAGLESS_TEST_GROUP", "copier"))


@app.handler(
    os.environ.get("LAGLESS_TEST_SOURCE", "copier-in"),
    output=os.environ.get("LAGLESS_TEST_OUT", "copier-out"),
    ordering="unordered",
    max_in_flight=50,
    on_failure="stop",
    value=str,
)
def copy(text: str) -> str:
    time.sleep(SLEEP_S)
    return text
