"""A record's headers are read from its message once: a header name confluent-kafka cannot
decode raises the same HeaderNameError at every read, and the message is never asked again
(after such a failure confluent-kafka's ``headers()`` returns a list holding a NULL name)."""

from __future__ import annotations

import pickle
from typing import Any, cast

import pytest
from confluent_kafka import Message

from lagless.engine.record import LazyHeaders, Record
from lagless.kafka.records import HeaderNameError


class BadNameMessage:
    """A consumed message whose headers() fails as confluent-kafka's does on a name that is
    not UTF-8, and fails the test if asked twice."""

    def __init__(self) -> None:
        self.asked = 0

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return 17

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return b"v"

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000)

    def headers(self) -> Any:
        self.asked += 1
        if self.asked > 1:
            pytest.fail("headers() asked again after it failed")
        raise UnicodeDecodeError("utf-8", b"\xff\xfe", 0, 1, "invalid start byte")


def test_an_unreadable_header_name_raises_at_every_read_and_asks_once() -> None:
    msg = BadNameMessage()
    headers = LazyHeaders(cast("Message", msg))
    for read in (len, list, repr, hash, lambda h: h[0]):
        with pytest.raises(HeaderNameError, match=r"not UTF-8.*\(t\[3\]@17\)"):
            read(headers)
    assert msg.asked == 1
    copied = pickle.loads(pickle.dumps(Record.from_message(cast("Message", BadNameMessage()))))
    with pytest.raises(HeaderNameError, match=r"not UTF-8.*\(t\[3\]@17\)"):
        list(copied.headers)  # in a handler process as on the poll thread
    assert copied.offset == 17


class ConfluentLikeMessage(BadNameMessage):
    """As confluent-kafka's Message: headers() fails once (SystemError), then hands out a
    list holding a NULL name, which crashes the process, unless set_headers replaced it."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: Any = None

    def set_headers(self, headers: Any) -> None:
        self.replaced = headers

    def headers(self) -> Any:
        self.asked += 1
        if self.replaced is not None:
            return self.replaced
        if self.asked > 1:
            pytest.fail("the broken list would be read: the process would crash")
        raise SystemError("<method 'headers'> returned a result with an exception set")


def test_every_record_of_a_message_whose_headers_failed_raises_and_never_crashes() -> None:
    msg = ConfluentLikeMessage()
    for _ in range(3):  # a record made again of the same message (a retry, a batch re-read)
        record = Record.from_message(cast("Message", msg))
        with pytest.raises(HeaderNameError, match=r"not UTF-8.*\(t\[3\]@17\)"):
            list(record.headers)
    assert msg.asked == 3
