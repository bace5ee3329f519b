"""The lab's load: records at a constant rate, each with an id, a timestamp and W ms of work.

The records are the jobs workload (``{"id", "sleep_ms", "created_ts"}``, header ``lagless-id``)
with ``sleep_ms`` fixed at the scenario's work time, keyed so they spread over every partition.
Every delivery report is kept: :class:`Load` knows each acknowledged record's id, partition,
offset and timestamp (the ledger the lost / duplicated counts and the lag sampler use), and each
partition's log end as the producer was told it.

The load is cheap on the lab's CPU (the lab shares the machine with the instances it measures):
every :data:`TICK_S` it produces, in one burst, every record due by then — ``floor(elapsed x
rate) + 1`` in all, so the rate is exact over any stretch longer than a tick — and serves the
delivery reports with one ``poll``. Each record's value comes from a byte template (the same
bytes ``json.dumps`` would give), and its timestamp (the record's ``created_ts`` and its Kafka
timestamp, the one end-to-end latency is measured from) is the wall clock at the moment it is
handed to the producer. When the lab process is short of CPU the load falls behind its schedule
and catches up in the next burst; :meth:`Load.notes` says how far behind it fell.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, Message

from lagless.ids import ID_HEADER
from lagless.kafka.clients import make_producer
from lagless.lab.model import Produced

log = logging.getLogger(__name__)

KEYS = 1000  # distinct keys: spreads records evenly over the partitions
TICK_S = 0.005  # the load produces what is due in bursts this far apart
BEHIND_NOTE_S = 1.0  # a load that fell further behind its schedule says so in the report


def job_encoder(id_prefix: str, work_ms: int) -> Callable[[int, int], bytes]:
    """``encode(i, created_ts)``: the jobs record ``{"id": id_prefix + str(i), "sleep_ms":
    work_ms, "created_ts": created_ts}`` as ``json.dumps(..., separators=(",", ":"))`` encodes
    it, from a template (no dict, no ``json.dumps`` per record)."""
    head = ('{"id":' + json.dumps(id_prefix)[:-1]).encode()  # the id string, left open
    middle = f'","sleep_ms":{int(work_ms)},"created_ts":'.encode()

    def encode(i: int, created_ts: int) -> bytes:
        return b"%s%d%s%d}" % (head, i, middle, created_ts)

    return encode


class Load:
    """A producer thread writing ``rate`` records/s to ``topic`` until :meth:`stop`."""

    def __init__(
        self, conf: Mapping[str, Any], topic: str, rate: float, work_ms: int, id_prefix: str
    ) -> None:
        self.topic = topic
        self.rate = rate
        self.failed = 0
        self.first_error: str | None = None
        self.max_behind_s = 0.0  # the furthest a record was produced after its due time
        self._prefix = id_prefix
        self._encode = job_encoder(id_prefix, work_ms)
        self._keys = [f"k{k}".encode() for k in range(KEYS)]
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

    def notes(self) -> list[str]:
        """What the report should say about the load: failed records, a late schedule."""
        notes = []
        if self.failed:
            notes.append(f"{self.failed} records failed to produce: {self.first_error}")
        if self.max_behind_s > BEHIND_NOTE_S:
            notes.append(
                f"the load fell up to {self.max_behind_s:.1f} s behind its {self.rate:g} "
                "records/s (the lab process was short of CPU); each record's timestamp is "
                "when it was produced"
            )
        return notes

    def _run(self) -> None:
        started = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            now = time.monotonic()
            due = int((now - started) * self.rate) + 1  # the first record is due at the start
            if due > sent:
                self.max_behind_s = max(self.max_behind_s, now - started - sent / self.rate)
                for i in range(sent, due):
                    self._send(i)
                sent = due
            self._producer.poll(0)  # every delivery report so far
            self._stop.wait(TICK_S)

    def _send(self, i: int) -> None:
        now_ms = time.time_ns() // 1_000_000  # the record's timestamp: set here, known here
        rid = f"{self._prefix}{i}"
        while True:
            try:
                self._producer.produce(
                    self.topic, self._encode(i, now_ms), key=self._keys[i % KEYS],
                    timestamp=now_ms, headers=[(ID_HEADER, rid.encode())],
                    on_delivery=partial(self._delivered, rid, now_ms),
                )  # fmt: skip
                return
            except BufferError:
                self._producer.poll(0.05)

    def _delivered(self, rid: str, ts_ms: int, err: KafkaError | None, msg: Message) -> None:
        """A delivery report (delivery reports do not carry the headers: the id is bound)."""
        if err is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = err.str()
                log.warning("lab load: delivery failed: %s", err.str())
            return
        partition, offset = msg.partition() or 0, msg.offset() or 0
        with self._lock:
            self._acked[(partition, offset)] = Produced(rid, partition, offset, float(ts_ms))
            if offset + 1 > self._ends.get(partition, 0):
                self._ends[partition] = offset + 1
