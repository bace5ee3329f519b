"""Log ends of paused partitions, asked of the cluster in the background.

The watch takes each partition's log end from the high watermark librdkafka caches from fetch
responses: free, and fresh while the partition is fetched. A partition paused by backpressure is
not fetched, so its cached end stops while producers go on, and every figure built on it (lag,
position lag, the end offset) would freeze or even fall exactly while the partition falls
behind. :class:`PausedEnds` asks the cluster for the ends of the partitions the watch names
(:meth:`want`: the paused ones) about once a second, on a thread of its own through an
:class:`~lagless.kafka.offsets.OffsetProbe` (the one place partition ends come from, right on
every broker), so the poll thread never waits for the answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException

from lagless.errors import ClusterError
from lagless.kafka.offsets import OffsetProbe

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]

ASK_EVERY_S = 1.0
ASK_TIMEOUT_S = 2.0


class PausedEnds:
    """Ends of the partitions last named by :meth:`want`, refreshed in the background."""

    def __init__(self, conf: Mapping[str, Any], every_s: float = ASK_EVERY_S) -> None:
        self._conf = dict(conf)
        self._every_s = every_s
        self._wanted: frozenset[PartitionKey] = frozenset()
        self._ends: dict[PartitionKey, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def want(self, keys: frozenset[PartitionKey]) -> None:
        """Keep the ends of ``keys`` fresh from now on (and forget the others)."""
        if keys == self._wanted:
            return
        self._wanted = keys
        self._ends = {k: v for k, v in self._ends.items() if k in keys}
        if keys and self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="lagless-ends", daemon=True)
            self._thread.start()

    def end(self, key: PartitionKey) -> int | None:
        """The last end the cluster gave for ``key``, if it is wanted and was asked."""
        return self._ends.get(key)

    def close(self, wait: float) -> None:
        """Stop asking; wait up to ``wait`` s for a question on its way (the thread, a daemon,
        closes its probe once the answer comes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)

    def _run(self) -> None:
        try:
            probe = OffsetProbe(self._conf)
        except KafkaException as exc:  # a figure: never the run's failure
            log.warning("cannot ask the ends of paused partitions: %s", exc)
            return
        try:
            while not self._stop.wait(self._every_s):
                wanted = self._wanted
                if not wanted:
                    continue
                try:
                    ends = probe.end_offsets(sorted(wanted), ASK_TIMEOUT_S)
                except (ClusterError, KafkaException) as exc:
                    log.debug("ends of paused partitions: %s", exc)
                    continue
                if wanted == self._wanted:  # not named otherwise meanwhile
                    self._ends = ends
        finally:
            probe.close()
