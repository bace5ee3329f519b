"""Service #1 of the lab's two-service topology: enrich each job and write it to topic #2.

``lagless consume --handler lagless.lab.enrich:enrich --batch-size N`` runs it: a batch
handler (one call per batch of a partition's records, in order). It does the records' work
(their ``sleep_ms``, one after the other), then writes their enriched jobs to the output topic
and waits for the broker's acknowledgements before it returns — so, as with a
:class:`lagless.App` handler with ``output=``, an input record is committed only after its
output is acknowledged (a record whose output was refused fails, by the engine's batch rule).
One acknowledgement wait per batch, not per record: per record, the wait would bound each
partition to one record per broker round trip. The output
keeps the input's key, its ``lagless-id`` header and its timestamp (the producer's creation
time), so service #2 measures end to end from the producer across both hops; its ``sleep_ms``
is service #2's work. The lab passes the output topic, service #2's work and the bootstrap in
the environment (:data:`OUTPUT_ENV`, :data:`NEXT_WORK_ENV`, :data:`BOOTSTRAP_ENV`).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, Message

from lagless.engine.handlers import decode_json, sleep_batch
from lagless.engine.record import Record
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.clients import make_producer

OUTPUT_ENV = "LAB_ENRICH_OUTPUT"  # not LAGLESS_*: those are settings
NEXT_WORK_ENV = "LAB_ENRICH_NEXT_WORK_MS"
BOOTSTRAP_ENV = "LAB_ENRICH_BOOTSTRAP"
ACK_TIMEOUT_S = 60.0


class Output:
    """One producer per process; :meth:`send` returns once the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self._producer = make_producer({
            "bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "all",
            "enable.idempotence": True,
        })  # fmt: skip
        self._thread = threading.Thread(target=self._serve, name="lagless-lab-enrich", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            self._producer.poll(0.05)  # delivery reports as they come

    def send(self, outgoing: Sequence[tuple[Record, bytes]]) -> dict[Record, Exception]:
        """Write each (input, value) and wait for every acknowledgement; the inputs whose
        output was refused, with why."""
        failed: dict[Record, Exception] = {}
        left = [len(outgoing)]
        done = threading.Event()
        lock = threading.Lock()

        def delivered(record: Record, err: KafkaError | None, _msg: Message) -> None:
            with lock:
                if err is not None:
                    failed[record] = LaglessError(f"{self.topic}: not written: {err.str()}")
                left[0] -= 1
                if left[0] == 0:
                    done.set()

        if not outgoing:
            return failed
        for record, value in outgoing:
            while True:
                try:
                    self._producer.produce(
                        self.topic, value, key=record.key, headers=list(record.headers),
                        timestamp=record.timestamp_ms or 0,
                        on_delivery=functools.partial(delivered, record),
                    )  # fmt: skip
                    break
                except BufferError:
                    time.sleep(0.01)
        if not done.wait(ACK_TIMEOUT_S):
            raise LaglessError(f"{self.topic}: no acknowledgement in {ACK_TIMEOUT_S:.0f} s")
        return failed


_OUTPUT: list[Output] = []
_LOCK = threading.Lock()


def output() -> Output:
    """This process's output (made on first use from the environment)."""
    with _LOCK:
        if not _OUTPUT:
            topic, bootstrap = os.environ.get(OUTPUT_ENV), os.environ.get(BOOTSTRAP_ENV)
            if not topic or not bootstrap:
                raise ConfigError(f"lagless.lab.enrich needs {OUTPUT_ENV} and {BOOTSTRAP_ENV}")
            _OUTPUT.append(Output(bootstrap, topic))
        return _OUTPUT[0]


def enriched(job: dict[str, Any], next_work_ms: float) -> bytes:
    """The output record's value: the job, marked enriched, with service #2's work."""
    return json.dumps({**job, "sleep_ms": next_work_ms, "enriched": True}).encode()


def enrich(records: Sequence[Record]) -> dict[Record, Exception]:
    """A batch handler: the records' work (their total ``sleep_ms``, as the lab's ``sleep``
    handler), then their enriched outputs written and acknowledged; the records that could not
    be decoded or written are returned as failed (the engine's batch rule)."""
    failed = sleep_batch(records)
    next_work = float(os.environ.get(NEXT_WORK_ENV, "0"))
    outgoing = [(r, enriched(decode_json(r), next_work)) for r in records if r not in failed]
    failed.update(output().send(outgoing))
    return failed
