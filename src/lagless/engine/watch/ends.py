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
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException

from lagless.errors import ClusterError
from lagless.kafka.offsets import OffsetProbe

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]

ASK_EVERY_S = 1.0
ASK_TIMEOUT_S = 2.0
KEEP_S = 5.0  # an answer outlives its partition's pause this long: until a fetch answers again
BACKOFF_MAX_S = 30.0  # between questions while the cluster does not answer


class PausedEnds:
    """Ends of the partitions last named by :meth:`want`, refreshed in the background.

    An answer is kept :data:`KEEP_S` after its partition stops being wanted: right after a
    resume, librdkafka's cached end is still the one from before the pause until its first
    fetch answers. While the cluster does not answer, questions are spaced out (doubling up to
    :data:`BACKOFF_MAX_S`) and the probe is made anew for the next one."""

    def __init__(self, conf: Mapping[str, Any], every_s: float = ASK_EVERY_S) -> None:
        self._conf = dict(conf)
        self._every_s = every_s
        self._wanted: frozenset[PartitionKey] = frozenset()
        self._ends: dict[PartitionKey, Asked] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def want(self, keys: frozenset[PartitionKey]) -> None:
        """Keep the ends of ``keys`` fresh from now on."""
        if keys == self._wanted:
            return
        self._wanted = keys
        if keys and self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="lagless-ends", daemon=True)
            self._thread.start()

    def end(self, key: PartitionKey) -> int | None:
        """The last end the cluster gave for ``key``, while it is wanted or was asked lately."""
        return usable_end(self._ends.get(key), key in self._wanted, time.monotonic())

    def close(self, wait: float) -> None:
        """Stop asking; wait up to ``wait`` s for a question on its way (the thread, a daemon,
        closes its probe once the answer comes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)

    def _run(self) -> None:
        probe: OffsetProbe | None = None
        pause = self._every_s
        try:
            while not self._stop.wait(pause):
                wanted = self._wanted
                if not wanted:
                    continue
                try:
                    probe = probe or OffsetProbe(self._conf)
                    ends = probe.end_offsets(sorted(wanted), ASK_TIMEOUT_S)
                except (ClusterError, KafkaException) as exc:
                    log.debug("ends of paused partitions: %s", exc)
                    if probe is not None:
                        probe.close()  # its client's log lines now, not all at the end
                        probe = None
                    pause = min(BACKOFF_MAX_S, pause * 2)
                    continue
                pause = self._every_s
                self._remember(ends)
        finally:
            if probe is not None:
                probe.close()

    def _remember(self, ends: dict[PartitionKey, int]) -> None:
        self._ends = remembered(self._ends, ends, time.monotonic())


Asked = tuple[int, float]  # an end, and when it was asked (monotonic seconds)


def usable_end(asked: Asked | None, wanted: bool, now: float) -> int | None:
    """An asked end still to be used: its partition is wanted, or it was asked lately."""
    if asked is None or (not wanted and now - asked[1] > KEEP_S):
        return None
    return asked[0]


def remembered(
    ends: dict[PartitionKey, Asked], answers: dict[PartitionKey, int], now: float
) -> dict[PartitionKey, Asked]:
    """``ends`` with ``answers`` (asked ``now``) in, and answers older than :data:`KEEP_S` out."""
    kept = {key: asked for key, asked in ends.items() if now - asked[1] <= KEEP_S}
    kept.update((key, (end, now)) for key, end in answers.items())
    return kept
