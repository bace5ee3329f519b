"""Which workers run a handler: an event loop for ``async def``, else processes or threads."""

from __future__ import annotations

from typing import Any

from lagless.engine.workers.aio import AsyncWorkers, is_async
from lagless.engine.workers.batch import run_batch
from lagless.engine.workers.inbox import Outbox
from lagless.engine.workers.processes import ProcessWorkers
from lagless.engine.workers.protocol import Runner, Workers
from lagless.engine.workers.retry import RetryPolicy, run_each
from lagless.engine.workers.threads import ThreadWorkers
from lagless.errors import ConfigError


def make_workers(
    processes: int,
    threads: int,
    handler: Any,
    batch: bool,
    policy: RetryPolicy,
    completions: Outbox,
    *,
    inline: bool = False,
) -> Workers:
    """Where ``handler`` runs, per record or per batch when ``batch``: an event loop if it is
    ``async def``, else processes or threads (with ``inline``, a fast handler's calls on
    the poll thread: see :mod:`lagless.engine.workers.inline`)."""
    if is_async(handler):
        if processes:
            raise ConfigError(
                "an async handler runs on the engine's event loop: --processes is for "
                "blocking, CPU-bound handlers"
            )
        return AsyncWorkers(handler, batch, policy, completions)
    run: Runner = run_batch if batch else run_each
    if processes:
        return ProcessWorkers(processes, handler, run, policy, completions)
    return ThreadWorkers(threads, handler, run, policy, completions, inline=inline, batch=batch)
