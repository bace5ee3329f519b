"""An app of two handlers in two groups, each taking SLEEP_MS per record: ``first`` reads
LAGLESS_TEST_A in group LAGLESS_TEST_GROUP_A, ``second`` LAGLESS_TEST_B in LAGLESS_TEST_GROUP_B
(what `lagless run --metrics-port` serves as /status: one object per handler)."""

from __future__ import annotations

import os
import time

import lagless

SLEEP_S = float(os.environ.get("LAGLESS_TEST_SLEEP_MS", "2")) / 1000
app = lagless.App(group="two-groups")


@app.handler(os.environ.get("LAGLESS_TEST_A", "two-a"), ordering="unordered",
             on_failure="stop", group=os.environ.get("LAGLESS_TEST_GROUP_A", "two-a"))  # fmt: skip
def first(value: bytes) -> None:
    time.sleep(SLEEP_S)


@app.handler(os.environ.get("LAGLESS_TEST_B", "two-b"), ordering="unordered",
             on_failure="stop", group=os.environ.get("LAGLESS_TEST_GROUP_B", "two-b"))  # fmt: skip
def second(value: bytes) -> None:
    time.sleep(SLEEP_S)
