"""An app whose ``async def`` handler copies SOURCE to OUT, awaiting SLEEP_MS per record (all
from the environment), run by ``asyncio.run(app.run_async())`` as a service would be: prints
the summary as JSON when it returns."""

from __future__ import annotations

import asyncio
import json
import os

import lagless

SLEEP_S = float(os.environ.get("LAGLESS_TEST_SLEEP_MS", "20")) / 1000
app = lagless.App(
    group=os.environ.get("LAGLESS_TEST_GROUP", "async-copier"),
    session_timeout_ms=6000,
    heartbeat_interval_ms=1500,
)


@app.handler(
    os.environ.get("LAGLESS_TEST_SOURCE", "copier-in"),
    output=os.environ.get("LAGLESS_TEST_OUT", "copier-out"),
    ordering="unordered",
    max_in_flight=50,
    on_failure="stop",
    value=str,
)
async def copy(text: str) -> str:
    await asyncio.sleep(SLEEP_S)
    return text


if __name__ == "__main__":
    summaries = asyncio.run(app.run_async())
    print(json.dumps({name: s.to_json() for name, s in summaries.items()}))
