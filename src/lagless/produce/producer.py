"""A producer with delivery accounting: every delivery is checked, failures counted.

``run_load`` produces a workload either as fast as it can (``count``) or paced at a ``rate``
for a ``duration``; the result says how many records were delivered and how many failed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

from confluent_kafka import KafkaError, Message

from lagless.errors import ClusterError, ConfigError
from lagless.kafka.clients import make_producer
from lagless.produce.profiles import Profile, profile_conf
from lagless.produce.workloads import OutRecord

log = logging.getLogger(__name__)

ProgressFn = Callable[[int], None]

PARTITION_ANY = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner decides
SERVE_EVERY = 64  # serve delivery callbacks every this many sends (and whenever the queue is full)


FLUSH_STEP_S = 0.2  # a flush asks whether to hurry this often


@dataclass
class DeliveryStats:
    """Counts kept by the delivery callback."""

    delivered: int = 0
    failed: int = 0
    bytes: int = 0
    first_error: str | None = None

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered += 1
            self.bytes += len(msg)
            return
        self.failed += 1
        if self.first_error is None:
            self.first_error = f"{err.str()} ({msg.topic()}[{msg.partition()}])"
            log.warning("delivery failed: %s", self.first_error)


@dataclass(frozen=True)
class ProduceResult:
    produced: int
    failed: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    profile: str
    first_error: str | None = None
    interrupted: bool = False  # stopped by Ctrl-C: the counts are what was sent until then

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if out["first_error"] is None:
            del out["first_error"]
        if not out["interrupted"]:
            del out["interrupted"]  # said only when it happened
        return out


class AccountedProducer:
    """confluent-kafka Producer whose every delivery report is counted."""

    def __init__(self, conf: Mapping[str, Any], profile: Profile | str = Profile.THROUGHPUT):
        self.profile = Profile(profile)
        self.stats = DeliveryStats()
        self._producer = make_producer({**profile_conf(self.profile), **conf})
        self._sent = 0

    def send(self, topic: str, record: OutRecord, partition: int = PARTITION_ANY) -> None:
        """Queue one record; waits (serving callbacks) while the local queue is full."""
        self.send_raw(topic, record.value, record.key, record.headers, partition)

    def send_raw(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
        partition: int = PARTITION_ANY,
    ) -> None:
        """Queue one record given by its parts (a ``None`` value is a tombstone)."""
        pairs = cast("list[tuple[str, str | bytes | None]]", list(headers or []))
        while True:
            try:
                self._producer.produce(
                    topic,
                    value,
                    key=key,
                    partition=partition,
                    on_delivery=self.stats.on_delivery,
                    headers=pairs or None,
                )
                break
            except BufferError:
                self._producer.poll(0.05)
        self._sent += 1
        if self._sent % SERVE_EVERY == 0:
            self._producer.poll(0)

    def poll(self, timeout: float = 0.0) -> None:
        self._producer.poll(timeout)

    def result(self, topic: str, sent: int, started: float) -> ProduceResult:
        """What was delivered of ``sent`` records since ``started`` (monotonic), after
        :meth:`flush`; ClusterError when none of them was."""
        seconds = max(time.monotonic() - started, 1e-9)
        stats = self.stats
        if sent and stats.delivered == 0:
            raise ClusterError(f"no record was delivered to {topic!r}: {stats.first_error}")
        return ProduceResult(
            produced=stats.delivered,
            failed=stats.failed,
            seconds=round(seconds, 3),
            records_per_s=round(stats.delivered / seconds, 1),
            mb_per_s=round(stats.bytes / seconds / 1e6, 3),
            profile=self.profile.value,
            first_error=stats.first_error,
        )

    def flush(self, timeout: float = 60.0, hurry: Callable[[], bool] | None = None) -> int:
        """Wait for outstanding deliveries, up to ``timeout`` s or until ``hurry()`` is true
        (asked every :data:`FLUSH_STEP_S`: a second Ctrl-C, while the broker is gone); any
        left then count as failed."""
        deadline = time.monotonic() + timeout
        hurried = False
        while True:
            wait = max(0.0, deadline - time.monotonic())
            left: int = self._producer.flush(wait if hurry is None else min(wait, FLUSH_STEP_S))
            if not left or time.monotonic() >= deadline:
                break
            if hurry is not None and hurry():
                hurried = True
                break
        if left:
            self.stats.failed += left
            if self.stats.first_error is None:
                why = "when stopped at once" if hurried else f"after {timeout:.0f} s"
                self.stats.first_error = f"{left} records undelivered {why}"
        return left


def check_load_args(count: int | None, rate: float | None, duration: float | None) -> None:
    """Exactly one of ``count`` or (``rate`` and ``duration``), each positive."""
    if count is None and (rate is None or duration is None):
        raise ConfigError("give --count N, or --rate R with --duration S")
    if count is not None and (rate is not None or duration is not None):
        raise ConfigError("--count cannot be combined with --rate/--duration")
    if count is not None and count < 0:
        raise ConfigError("--count must be 0 or more")
    if rate is not None and rate <= 0:
        raise ConfigError("--rate must be positive")
    if duration is not None and duration <= 0:
        raise ConfigError("--duration must be positive")


def run_load(
    conf: Mapping[str, Any],
    topic: str,
    records: Iterable[OutRecord],
    *,
    count: int | None = None,
    rate: float | None = None,
    duration: float | None = None,
    profile: Profile | str = Profile.THROUGHPUT,
    on_progress: ProgressFn | None = None,
    flush_timeout: float = 120.0,
    stop: threading.Event | None = None,
    hurry: Callable[[], bool] | None = None,
) -> ProduceResult:
    """Produce ``count`` records, or ``rate`` records/s for ``duration`` seconds; ``stop``
    (set by the CLI's Ctrl-C handler) ends it early: what was sent is flushed and counted,
    unless ``hurry()`` turns true meanwhile (a second Ctrl-C): what is still undelivered then
    counts as failed."""
    check_load_args(count, rate, duration)
    producer = AccountedProducer(conf, profile)
    total = count if count is not None else int((rate or 0) * (duration or 0))
    started = time.monotonic()
    sent = 0
    interrupted = False
    halt = stop or threading.Event()
    try:
        for record in records:
            if sent >= total:
                break
            if rate is not None:
                due = started + sent / rate
                while (wait := due - time.monotonic()) > 0 and not halt.is_set():
                    producer.poll(min(wait, 0.1))  # short steps: a stop is seen at once
            if halt.is_set():
                interrupted = True
                break
            producer.send(topic, record)
            sent += 1
            if on_progress is not None and sent % 1000 == 0:
                on_progress(sent)
    except KeyboardInterrupt:  # Ctrl-C: what was sent is flushed and counted
        interrupted = True
    producer.flush(flush_timeout, hurry)
    if on_progress is not None:
        on_progress(sent)
    result = producer.result(topic, sent, started)
    return replace(result, interrupted=True) if interrupted else result
