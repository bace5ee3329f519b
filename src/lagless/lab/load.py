"""The lab's load: records at a constant rate, each with an id, a timestamp and W ms of work.

The records are the jobs workload (``{"id", "sleep_ms", "created_ts"}``, header ``lagless-id``)
with ``sleep_ms`` fixed at the scenario's work time, keyed so they spread over every partition.
Every delivery report is kept: :class:`Load` knows each acknowledged record's id, partition,
offset and timestamp (the ledger the lost / duplicated counts and the lag sampler use), and each
partition's log end as the producer was told it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from functools import partial
from typing import Any, cast

from confluent_kafka import KafkaError, Message

from lagless.kafka.clients import make_producer
from lagless.lab.model import Produced
from lagless.produce.workloads import Workload, WorkloadSpec, generate

log = logging.getLogger(__name__)

KEYS = 1000  # distinct keys: spreads records evenly over the partitions


class Load:
    """A producer thread writing ``rate`` records/s to ``topic`` until :meth:`stop`."""

    def __init__(
        self, conf: Mapping[str, Any], topic: str, rate: float, work_ms: int, id_prefix: str
    ) -> None:
        self.topic = topic
        self.rate = rate
        self.failed = 0
        self.first_error: str | None = None
        self._spec = WorkloadSpec(
            Workload.JOBS, keys=KEYS, sleep_ms=(work_ms, work_ms), id_prefix=id_prefix
        )
        self._producer = make_producer(
            {**conf, "linger.ms": 5, "acks": "all", "enable.idempotence": True}
        )
        self._lock = threading.Lock()
        self._ends: dict[int, int] = {}
        self._acked: dict[tuple[int, int], Produced] = {}  # (partition, offset) -> record
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lagless-lab-load", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, flush_timeout: float = 30.0) -> None:
        """Stop producing and wait for every delivery report."""
        self._stop.set()
        self._thread.join()
        left = self._producer.flush(flush_timeout)
        if left:
            self.failed += left
            self.first_error = self.first_error or f"{left} records undelivered at the end"

    @property
    def produced(self) -> list[Produced]:
        """Every record acknowledged so far."""
        with self._lock:
            return list(self._acked.values())

    def ends(self) -> dict[int, int]:
        """Each partition's log end as acknowledged so far (offset of the last record + 1)."""
        with self._lock:
            return dict(self._ends)

    def timestamp_ms(self, partition: int, offset: int) -> float | None:
        """The timestamp of the acknowledged record at ``partition``/``offset``."""
        with self._lock:
            record = self._acked.get((partition, offset))
        return None if record is None else record.ts_ms

    def _run(self) -> None:
        started = time.monotonic()
        for sent, record in enumerate(generate(self._spec)):
            if self._stop.is_set():
                return
            due = started + sent / self.rate
            while (wait := due - time.monotonic()) > 0:  # poll returns at each delivery report
                self._producer.poll(wait)
                if self._stop.is_set():
                    return
            now_ms = int(time.time() * 1000)  # the record's timestamp: set here, known here
            while True:
                try:
                    self._producer.produce(
                        self.topic, record.value, key=record.key, timestamp=now_ms,
                        headers=cast("list[tuple[str, str | bytes | None]]", record.headers),
                        on_delivery=partial(self._delivered, record.id, now_ms),
                    )  # fmt: skip
                    break
                except BufferError:
                    self._producer.poll(0.05)
            self._producer.poll(0)

    def _delivered(self, rid: str, ts_ms: int, err: KafkaError | None, msg: Message) -> None:
        """A delivery report (delivery reports do not carry the headers: the id is bound)."""
        if err is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = err.str()
                log.warning("lab load: delivery failed: %s", err.str())
            return
        partition, offset = msg.partition() or 0, msg.offset() or 0
        ts = float(ts_ms)
        with self._lock:
            self._acked[(partition, offset)] = Produced(rid, partition, offset, ts)
            if offset + 1 > self._ends.get(partition, 0):
                self._ends[partition] = offset + 1
