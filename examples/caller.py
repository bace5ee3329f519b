"""Async caller: each record awaits slow I/O (a stand-in for an HTTP call), 1,000 at once.

::

    lagless topic create calls --partitions 3
    lagless topic create calls-done --partitions 3
    lagless produce --topic calls --workload jobs --count 5000 --sleep-ms 100:300
    lagless run examples.caller:app --until-idle 3

5,000 calls of 100-300 ms took 1.7 s of processing at 1,000 in flight on a loaded 2-core
machine (1.0 s ideal), instead of 1,000 s one by one: the topic's 3 partitions do not cap it,
the engine runs the records of a partition side by side, as tasks on its event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import lagless

app = lagless.App(group="caller")


@app.handler("calls", ordering="unordered", max_in_flight=1000, on_failure="skip",
             value="json", output="calls-done")  # fmt: skip
async def call(job: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(job["sleep_ms"] / 1000)  # e.g. await http.post(...)
    return {"id": job["id"], "status": 200}


if __name__ == "__main__":
    app.run()
