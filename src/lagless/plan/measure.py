"""Measure one partition on the target cluster: how fast it takes records and gives them back.

Both measurements use a fresh one-partition scratch topic (deleted afterwards):

* produce: :func:`lagless.produce.producer.run_load` with the chosen profile, ``count`` records
  of about ``record_bytes`` each, as fast as the producer goes;
* consume: the same records, read back by the consumer engine (:func:`lagless.engine.run_engine`)
  running the handler. The rate counts from the first handler call to the last completion, so
  the group join is not in it; the run stops after ``count`` records or ``max_seconds``.

A rate measured on a failing handler sizes nothing: the first failure stops the measurement
(failures are counted, not logged one by one) and :func:`measure` refuses with one line that
names the failures and the first one's record.

Record values are the chosen workload's JSON, padded with random hex (not a repeated byte, which
would compress unrealistically well) to ``record_bytes``.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lagless.engine.handlers import Handler
from lagless.errors import LaglessError
from lagless.kafka.admin import create_topic, delete_topic
from lagless.produce.producer import ProduceResult, run_load
from lagless.produce.profiles import Profile
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate

log = logging.getLogger(__name__)

POOL = 1000  # distinct records, cycled, so the generator does not slow the producer down
FIRST_RECORD_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ConsumeOptions:
    """How the engine consumes during the measurement."""

    ordering: str = "partition"
    max_in_flight: int = 64
    max_seconds: float = 15.0


@dataclass(frozen=True)
class ConsumeResult:
    processed: int
    failed: int
    seconds: float
    records_per_s: float
    handler_seconds: float | None
    method: str  # "engine"
    first_error: str | None = None


@dataclass(frozen=True)
class Measurement:
    produce: ProduceResult
    consume: ConsumeResult
    record_bytes: int


def sample_records(
    workload: Workload, record_bytes: int, sleep_ms: tuple[int, int] = (1, 5), seed: int = 7
) -> list[OutRecord]:
    """``POOL`` records of ``workload`` whose values are about ``record_bytes`` long."""
    spec = WorkloadSpec(workload=workload, sleep_ms=sleep_ms, seed=seed)
    plain = list(itertools.islice(generate(spec), POOL))
    base = max(len(r.value) for r in plain)
    pad = max(0, record_bytes - base - len(',"payload":""'))
    if pad == 0:
        return plain
    rng = random.Random(seed)
    padded = list(itertools.islice(generate(replace(spec, payload_bytes=pad)), POOL))
    filler = b"x" * pad
    return [
        replace(
            r, value=r.value.replace(filler, rng.randbytes((pad + 1) // 2).hex()[:pad].encode())
        )
        for r in padded
    ]


def measure_produce(
    conf: Mapping[str, Any], topic: str, records: list[OutRecord], count: int, profile: Profile
) -> ProduceResult:
    result = run_load(conf, topic, itertools.cycle(records), count=count, profile=profile)
    if result.failed:
        raise LaglessError(
            f"{result.failed} of {count} records failed during the produce measurement: "
            f"{result.first_error}"
        )
    return result


class TimedHandler:
    """Wraps the handler: counts completions and failures, times the busy span."""

    def __init__(self, handler: Handler, stop: threading.Event, max_seconds: float) -> None:
        self._handler = handler
        self._stop = stop
        self._max_seconds = max_seconds
        self._lock = threading.Lock()
        self.first_start: float | None = None
        self.last_end = 0.0
        self.done = 0
        self.failed = 0
        self.busy = 0.0
        self.first_error: str | None = None
        self.timer: threading.Timer | None = None

    def __call__(self, record: Any) -> object:
        start = time.monotonic()
        if self.first_start is None:
            with self._lock:
                if self.first_start is None:
                    self.first_start = start
                    self.timer = threading.Timer(self._max_seconds, self._stop.set)
                    self.timer.daemon = True
                    self.timer.start()
        error: str | None = None
        try:
            return self._handler(record)
        except Exception as exc:  # counted here: the measurement stops and is refused
            error = f"{type(exc).__name__}: {exc} ({getattr(record, 'coordinates', '?')})"
            self._stop.set()
            return None
        finally:
            end = time.monotonic()
            with self._lock:
                self.done += 1
                self.busy += end - start
                self.last_end = max(self.last_end, end)
                if error is not None:
                    self.failed += 1
                    self.first_error = self.first_error or error

    def result(self, method: str) -> ConsumeResult:
        if self.first_start is None or self.done == 0:
            raise LaglessError("the consume measurement processed no record")
        seconds = max(self.last_end - self.first_start, 1e-6)
        return ConsumeResult(
            processed=self.done,
            failed=self.failed,
            seconds=round(seconds, 3),
            records_per_s=round(self.done / seconds, 1),
            handler_seconds=self.busy / self.done,
            method=method,
            first_error=self.first_error,
        )


def measure_consume(
    conf: Mapping[str, Any], topic: str, handler: Handler, count: int, options: ConsumeOptions
) -> ConsumeResult:
    """Consume ``topic`` (one partition) with the engine running ``handler``."""
    from lagless.engine import EngineConfig, run_engine

    stop = threading.Event()
    timed = TimedHandler(handler, stop, options.max_seconds)
    config = EngineConfig.build(
        topics=(topic,),
        group=f"lagless-plan-{uuid.uuid4().hex[:8]}",
        ordering=options.ordering,
        max_in_flight=options.max_in_flight,
        on_failure="skip",
        retries=0,
        count=count,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1500,
    )

    def give_up_if_idle() -> None:
        if timed.first_start is None:
            log.warning("no record consumed within %.0f s: stopping", FIRST_RECORD_TIMEOUT_S)
            stop.set()

    watchdog = threading.Timer(FIRST_RECORD_TIMEOUT_S, give_up_if_idle)
    watchdog.daemon = True
    watchdog.start()
    try:
        run_engine(conf, config, timed, stop=stop)
    finally:
        watchdog.cancel()
        if timed.timer is not None:
            timed.timer.cancel()
    return timed.result("engine")


def measure(
    conf: Mapping[str, Any],
    handler: Handler,
    *,
    workload: Workload,
    record_bytes: int,
    count: int,
    profile: Profile,
    sleep_ms: tuple[int, int] = (1, 5),
    consume: ConsumeOptions | None = None,
    replication: int = 1,
) -> Measurement:
    """Produce then consume ``count`` records through a one-partition scratch topic."""
    if count < 100:
        raise LaglessError("--measure-records must be at least 100")
    records = sample_records(workload, record_bytes, sleep_ms)
    mean_bytes = round(sum(len(r.value) for r in records) / len(records))
    scratch = f"lagless-plan-{uuid.uuid4().hex[:10]}"
    create_topic(conf, scratch, 1, replication=replication)
    try:
        log.info("measuring produce: %d records of ~%d B to %s", count, mean_bytes, scratch)
        produced = measure_produce(conf, scratch, records, count, profile)
        log.info("measuring consume of %s", scratch)
        consumed = measure_consume(conf, scratch, handler, count, consume or ConsumeOptions())
    finally:
        try:
            delete_topic(conf, scratch)
        except LaglessError as exc:
            log.warning("could not delete scratch topic %s: %s", scratch, exc)
    if consumed.failed:
        raise LaglessError(
            f"the handler failed on {consumed.failed} of {consumed.processed} records measured "
            f"(first: {consumed.first_error}); no plan from a failing handler: fix it, or "
            "measure with records it accepts (--workload)"
        )
    return Measurement(produced, consumed, mean_bytes)
