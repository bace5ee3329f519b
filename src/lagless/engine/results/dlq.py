"""Dead-letter publishing: a record that failed for good goes to the DLQ topic, with why.

The dead letter keeps the original key, value and headers and adds the ``lagless-dlq-*``
headers below. A record whose headers cannot be read (a header name that is not UTF-8, which no
confluent-kafka client can write either) keeps none of them: ``lagless-dlq-headers-dropped``
says so, and the original stays at the coordinates the letter names. A record counts as
finished (and may be committed past) only once the broker acknowledged its dead letter: the
delivery report comes back through the poll loop's completion queue as a
:class:`DeadLettered`, and so does a dead letter refused before sending. The producer is sized
for any record the consumer can deliver (:func:`dlq_message_max_bytes`); a record that still
cannot be dead-lettered stops the run with its coordinates, uncommitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from lagless.engine.record import Record
from lagless.engine.workers.inbox import Outbox
from lagless.engine.workers.retry import Outcome
from lagless.kafka.clients import make_producer
from lagless.kafka.records import HeaderNameError

H_ERROR_CLASS = "lagless-dlq-error-class"
H_ERROR = "lagless-dlq-error"
H_ATTEMPTS = "lagless-dlq-attempts"
H_TOPIC = "lagless-dlq-topic"
H_PARTITION = "lagless-dlq-partition"
H_OFFSET = "lagless-dlq-offset"
H_TIMESTAMP = "lagless-dlq-timestamp"
H_STACKTRACE = "lagless-dlq-stacktrace"  # as Kafka Connect's __connect.errors.stacktrace
H_HEADERS_DROPPED = "lagless-dlq-headers-dropped"  # why the record's own headers are not in it


Headers = list[tuple[str, str | bytes | None]]

FLUSH_S = 10.0  # each wait for outstanding dead letters at close (twice: see Engine._close)

# The largest record the consumer can deliver is bounded by its receive.message.max.bytes
# (librdkafka's default: 100 MB); the dead letter adds its headers. librdkafka's ceiling.
RECEIVE_MAX_DEFAULT = 100_000_000
HEADERS_ROOM = 64 * 1024
MESSAGE_MAX_CEILING = 1_000_000_000


def dlq_message_max_bytes(conf: Mapping[str, Any]) -> int:
    """``message.max.bytes`` for the DLQ producer: whatever the source can deliver fits."""
    receive = int(conf.get("receive.message.max.bytes", RECEIVE_MAX_DEFAULT))
    wanted = max(receive, int(conf.get("message.max.bytes", 0))) + HEADERS_ROOM
    return min(MESSAGE_MAX_CEILING, wanted)


def dead_letter_headers(record: Record, outcome: Outcome) -> Headers:
    """The record's own headers plus why and where it failed."""
    extra = {
        H_ERROR_CLASS: outcome.error_class,
        H_ERROR: outcome.error_message,
        H_ATTEMPTS: str(outcome.attempts),
        H_TOPIC: record.topic,
        H_PARTITION: str(record.partition),
        H_OFFSET: str(record.offset),
        H_TIMESTAMP: "" if record.timestamp_ms is None else str(record.timestamp_ms),
        H_STACKTRACE: outcome.stacktrace,
    }
    try:
        own = list(record.headers)
    except HeaderNameError as exc:
        own = []
        extra[H_HEADERS_DROPPED] = f"{exc.reason}: its headers are not copied"
    return [*own, *((k, v.encode()) for k, v in extra.items())]


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """The broker's answer to one dead letter."""

    record: Record
    epoch: int
    outcome: Outcome
    error: str | None  # None: stored


class DeadLetterQueue:
    """An idempotent producer to the DLQ topic reporting into the completion queue."""

    def __init__(self, conf: Mapping[str, Any], topic: str, completions: Outbox) -> None:
        self.topic = topic
        self._completions = completions
        self._producer = make_producer(
            {
                **conf,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.max.bytes": dlq_message_max_bytes(conf),
            }
        )

    def publish(self, record: Record, epoch: int, outcome: Outcome) -> None:
        def report(err: KafkaError | None, _msg: Message) -> None:
            error = None if err is None else err.str()
            self._completions.put(DeadLettered(record, epoch, outcome, error))

        try:
            self._producer.produce(
                self.topic,
                record.value,
                key=record.key,
                headers=dead_letter_headers(record, outcome),
                on_delivery=report,
            )
        except KafkaException as exc:  # refused before sending (e.g. too large): reported too
            self._completions.put(DeadLettered(record, epoch, outcome, exc.args[0].str()))
        self._producer.poll(0)

    def poll(self) -> None:
        """Serve delivery reports (they land on the completion queue)."""
        self._producer.poll(0)

    def flush(self, timeout: float) -> int:
        """Wait for outstanding dead letters; how many are still undelivered."""
        left: int = self._producer.flush(timeout)
        return left
