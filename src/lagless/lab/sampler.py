"""The lab's own lag readings, independent of the instances it measures.

Every ``interval`` seconds a :class:`LagSampler` reads the group's committed offsets from the
broker (a consumer that never joins the group) and the log ends the producer was acknowledged:

* lag in records = sum over partitions of (log end - committed offset);
* lag in seconds = :func:`lagless.observe.lagtime.lag_seconds` (now - timestamp of the first
  record not yet committed; 0 when caught up: the one definition lagless uses everywhere), the
  largest over partitions.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from lagless.kafka.clients import make_consumer
from lagless.lab.load import Load
from lagless.lab.model import LagSample
from lagless.observe.lagtime import lag_seconds

log = logging.getLogger(__name__)


class LagSampler:
    def __init__(
        self,
        conf: Mapping[str, Any],
        topic: str,
        partitions: int,
        group: str,
        load: Load,
        interval: float = 0.5,
    ) -> None:
        self.samples: list[LagSample] = []
        self._topic = topic
        self._partitions = partitions
        self._load = load
        self._interval = interval
        self._consumer = make_consumer(
            {
                **conf,
                "group.id": group,
                "client.id": f"lagless-lab-sampler-{uuid.uuid4().hex[:6]}",
                "enable.auto.commit": False,
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lagless-lab-lag", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._consumer.close()

    def latest(self) -> LagSample | None:
        return self.samples[-1] if self.samples else None

    def committed(self, timeout: float = 5.0) -> dict[int, int]:
        """The group's committed offset per partition (0 where nothing is committed)."""
        wanted = [TopicPartition(self._topic, p) for p in range(self._partitions)]
        back = self._consumer.committed(wanted, timeout=timeout)
        return {tp.partition: max(tp.offset, 0) for tp in back}

    def sample(self) -> LagSample:
        committed = self.committed()
        ends = self._load.ends()
        now = time.time()
        per_partition: list[int] = []
        oldest_s = 0.0
        for p in range(self._partitions):
            end, base = ends.get(p, 0), committed.get(p, 0)
            lag = max(0, end - base)
            per_partition.append(lag)
            ts = self._load.timestamp_ms(p, base) if lag else None
            seconds = lag_seconds(int(now * 1000), None if ts is None else int(ts), lag)
            oldest_s = max(oldest_s, seconds or 0.0)
        return LagSample(now, sum(per_partition), round(oldest_s, 3), tuple(per_partition))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.samples.append(self.sample())
            except KafkaException as exc:
                log.info("lag sample failed: %s", exc.args[0])
