"""The lab's own lag readings, independent of the group it measures.

Every ``interval`` seconds a :class:`LagSampler` reads the group's committed offsets from the
broker (a consumer that never joins the group) and the partitions' log ends (for the lab's own
topic, the offsets its producer was acknowledged; for a topic another service writes, the
broker's high watermarks):

* committed lag in records = sum over partitions of (log end - committed offset);
* lag in seconds = :func:`lagless.observe.lagtime.lag_seconds` (now - timestamp of the first
  record not yet committed; 0 when caught up: the one definition lagless uses everywhere), the
  largest over partitions; None where the timestamps are not known to the lab;
* position lag in records, when the service's instances are given
  (:mod:`lagless.lab.positions`): per partition, the ``lagless_position_lag_records`` gauge of
  the instance that owns it (log end - its consumer's position, set at every poll), a partition
  owned by nobody counted from its committed offset; summed over the topic.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from lagless.kafka.clients import make_consumer
from lagless.lab.model import LagSample
from lagless.observe.lagtime import lag_seconds

log = logging.getLogger(__name__)

EndsFn = Callable[[], dict[int, int]]
TimestampFn = Callable[[int, int], float | None]
PositionsFn = Callable[[], dict[int, int]]


class LagSampler:
    def __init__(
        self,
        conf: Mapping[str, Any],
        topic: str,
        partitions: int,
        group: str,
        ends: EndsFn | None = None,
        timestamp_ms: TimestampFn | None = None,
        positions: PositionsFn | None = None,
        interval: float = 0.5,
    ) -> None:
        self.samples: list[LagSample] = []
        self._topic = topic
        self._partitions = partitions
        self._ends = ends or self.broker_ends
        self._timestamp_ms = timestamp_ms
        self._positions = positions
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
        if self._thread.is_alive():
            self._thread.join()
        self._consumer.close()

    def latest(self) -> LagSample | None:
        return self.samples[-1] if self.samples else None

    def committed(self, timeout: float = 5.0) -> dict[int, int]:
        """The group's committed offset per partition (0 where nothing is committed)."""
        wanted = [TopicPartition(self._topic, p) for p in range(self._partitions)]
        back = self._consumer.committed(wanted, timeout=timeout)
        return {tp.partition: max(tp.offset, 0) for tp in back}

    def broker_ends(self) -> dict[int, int]:
        """Each partition's high watermark as the broker answers now."""
        ends: dict[int, int] = {}
        for p in range(self._partitions):
            tp = TopicPartition(self._topic, p)
            ends[p] = int(self._consumer.get_watermark_offsets(tp, timeout=5.0)[1])
        return ends

    def ends(self) -> dict[int, int]:
        return self._ends()

    def sample(self) -> LagSample:
        committed = self.committed()
        ends = self._ends()
        owned = self._positions() if self._positions is not None else None
        now = time.time()
        per_partition: list[int] = []
        oldest_s: float | None = 0.0 if self._timestamp_ms is not None else None
        position_total = 0
        for p in range(self._partitions):
            end, base = ends.get(p, 0), committed.get(p, 0)
            lag = max(0, end - base)
            per_partition.append(lag)
            if owned is not None:
                position_total += owned.get(p, lag)  # owned by nobody: from its commit
            if self._timestamp_ms is not None and oldest_s is not None:
                ts = self._timestamp_ms(p, base) if lag else None
                seconds = lag_seconds(int(now * 1000), None if ts is None else int(ts), lag)
                oldest_s = max(oldest_s, seconds or 0.0)
        return LagSample(
            now, sum(per_partition), None if oldest_s is None else round(oldest_s, 3),
            tuple(per_partition), position_total if owned is not None else None,
        )  # fmt: skip

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.samples.append(self.sample())
            except KafkaException as exc:
                log.info("lag sample failed: %s", exc.args[0])
