"""The consumer engine: one poll loop, a worker pool, safe commits, backpressure.

Library API (stable; the CLI, the demo and the planner call it in-process)::

    from lagless.config import KafkaSettings
    from lagless.engine import EngineConfig, load_handler, run_engine

    conf = KafkaSettings().to_librdkafka()  # LAGLESS_BOOTSTRAP / the config file
    config = EngineConfig.build(topics=("jobs",), group="g1", ordering="unordered",
                                max_in_flight=200, on_failure="skip", until_idle_s=5)
    summary = run_engine(conf, config, load_handler("sleep"), metrics=None, stop=None)
    summary.processed, summary.records_per_s, summary.per_partition, summary.to_json()

``run_engine(conf, config, handler, metrics=None, stop=None, on_progress=None) -> RunSummary``

* ``conf``: librdkafka properties of the cluster (``KafkaSettings.to_librdkafka()``); the
  consumer properties are derived from it and ``config`` by ``EngineConfig.consumer_conf``.
* ``config``: :class:`EngineConfig` (frozen; ``EngineConfig.build(**kw)`` turns validation
  errors into a one-line ``ConfigError``). Stop conditions: ``count``, ``until_idle_s``.
* ``handler``: ``Callable[[Record], object]`` or an ``async def`` (run on the engine's
  event loop, see ``aio``); any exception fails the attempt (retried, then
  dead-lettered or stop/skip per ``on_failure``), ``DecodeError`` goes straight to the DLQ.
  With ``batch_size=N`` it is a batch handler, ``Callable[[Sequence[Record]], object]``
  (returning None, or ``{record: exception}`` for the records that failed; the rule for
  retries and splitting is in :mod:`lagless.engine.workers.batch`).
  ``load_handler(spec, batch=True)`` gives the batch form of a built-in. With
  ``processes=N`` it must pickle (a module-level function).
* ``metrics``: a :class:`lagless.observe.metrics.Metrics` to update (one is made if None).
* ``stop``: a ``threading.Event``; setting it stops the run (drain, commit, close).
* ``on_progress``: called with a :class:`Progress` about twice a second, on the poll thread.

Returns a :class:`RunSummary`; raises ``RecordError`` when a record fails with
``on_failure=stop``, ``ClusterError`` on a fatal consumer or DLQ error (after committing what
is safe). Structure: ``loop`` (:class:`Engine`: the loop and the lifecycle) owns its parts,
one per subpackage by concern: ``intake`` (poll, backpressure), ``dispatch`` (the strategy
chosen once: per record or per batch; the launcher), ``workers`` (threads, processes, asyncio
behind one protocol), ``results`` (completions, DLQ, metrics, the record ledger), ``offsets``
(the offset ledger: everything about what is safe to commit), ``partitions`` (owned state,
rebalance callbacks), ``watch`` (gauges, health, idle); see docs/engine.md, "Structure".
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from lagless.engine.config import EngineConfig, OnFailure, Ordering
from lagless.engine.events import EventKind, EventLog
from lagless.engine.handlers import BatchHandler, DecodeError, Handler, load_handler
from lagless.engine.loop import Engine, ProgressFn
from lagless.engine.record import Record
from lagless.engine.results.ledger import Ledger
from lagless.engine.summary import Latency, Progress, RunSummary
from lagless.engine.watch.health import Health, HealthStatus
from lagless.observe.metrics import Metrics

__all__ = [
    "BatchHandler",
    "DecodeError",
    "Engine",
    "EngineConfig",
    "EventKind",
    "EventLog",
    "Handler",
    "Health",
    "HealthStatus",
    "Latency",
    "Ledger",
    "OnFailure",
    "Ordering",
    "Progress",
    "Record",
    "RunSummary",
    "load_handler",
    "run_engine",
]


def run_engine(
    conf: Mapping[str, Any],
    config: EngineConfig,
    handler: Handler | BatchHandler,
    metrics: Metrics | None = None,
    stop: threading.Event | None = None,
    on_progress: ProgressFn | None = None,
    *,
    events: EventLog | None = None,
    ledger: Ledger | None = None,
) -> RunSummary:
    """Consume ``config.topics`` with ``handler`` until a stop condition; see the module doc."""
    engine = Engine(
        conf, config, handler, metrics=metrics, stop=stop, on_progress=on_progress,
        events=events, ledger=ledger,
    )  # fmt: skip
    return engine.run()
