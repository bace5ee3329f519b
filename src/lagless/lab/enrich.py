"""Service #1 of the lab's two-service topology: enrich each job and write it to topic #2.

``lagless consume --handler lagless.lab.enrich:enrich`` runs it. Per record it does the job's
work (``sleep_ms``), then writes the enriched job to the output topic and waits for the broker's
acknowledgement before it returns — so, as with a :class:`lagless.App` handler with
``output=``, an input record is committed only after its output is acknowledged. The output
keeps the input's key, its ``lagless-id`` header and its timestamp (the producer's creation
time), so service #2 measures end to end from the producer across both hops; its ``sleep_ms``
is service #2's work. The lab passes the output topic, service #2's work and the bootstrap in
the environment (:data:`OUTPUT_ENV`, :data:`NEXT_WORK_ENV`, :data:`BOOTSTRAP_ENV`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from confluent_kafka import KafkaError, Message

from lagless.engine.handlers import decode_json, sleep_ms
from lagless.engine.record import Record
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.clients import make_producer

OUTPUT_ENV = "LAGLESS_LAB_OUTPUT"
NEXT_WORK_ENV = "LAGLESS_LAB_NEXT_WORK_MS"
BOOTSTRAP_ENV = "LAGLESS_LAB_BOOTSTRAP"
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

    def send(self, record: Record, value: bytes) -> None:
        done = threading.Event()
        failure: list[str] = []

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failure.append(err.str())
            done.set()

        while True:
            try:
                self._producer.produce(
                    self.topic, value, key=record.key, headers=list(record.headers),
                    timestamp=record.timestamp_ms or 0, on_delivery=delivered,
                )  # fmt: skip
                break
            except BufferError:
                time.sleep(0.01)
        if not done.wait(ACK_TIMEOUT_S):
            raise LaglessError(f"{self.topic}: no acknowledgement in {ACK_TIMEOUT_S:.0f} s")
        if failure:
            raise LaglessError(f"{self.topic}: not written: {failure[0]}")


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


def enrich(record: Record) -> None:
    """Work ``sleep_ms``, then write the enriched job and wait for its acknowledgement."""
    job = decode_json(record)
    time.sleep(sleep_ms(record) / 1000.0)
    next_work = float(os.environ.get(NEXT_WORK_ENV, "0"))
    output().send(record, enriched(job, next_work))
