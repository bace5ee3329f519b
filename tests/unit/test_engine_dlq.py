"""Dead-letter producer sizing and refusals (unit level: librdkafka refuses sizes locally,
no broker needed)."""

from __future__ import annotations

from lagless.engine.record import Record
from lagless.engine.results.dlq import DeadLettered, DeadLetterQueue, dlq_message_max_bytes
from lagless.engine.workers.inbox import new_inbox
from lagless.engine.workers.retry import Outcome


def test_dlq_producer_size_follows_the_consumer_receive_limit() -> None:
    assert dlq_message_max_bytes({}) > 100_000_000
    assert dlq_message_max_bytes({"receive.message.max.bytes": 5_000_000}) < 6_000_000
    assert dlq_message_max_bytes({"receive.message.max.bytes": 2_000_000_000}) == 1_000_000_000


def test_a_dead_letter_refused_before_sending_comes_back_as_an_error() -> None:
    completions = new_inbox()
    dlq = DeadLetterQueue(
        {"bootstrap.servers": "127.0.0.1:1", "receive.message.max.bytes": 1000}, "d", completions
    )
    record = Record("t", 2, 40, None, b"x" * 200_000, None)
    dlq.publish(record, 1, Outcome(False, 1, 0.0, 0.0, "ValueError", "bad"))
    letter = completions.get(timeout=5)
    assert isinstance(letter, DeadLettered) and letter.record is record
    assert letter.error is not None and "too large" in letter.error.lower()
