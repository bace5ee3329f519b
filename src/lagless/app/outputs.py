"""Output topics: what a handler returns is produced, and the input waits for the acks.

A handler's return value becomes output records:

* ``None``: nothing;
* :class:`Out`: one record (``topic`` defaults to the handler's ``output``, ``key`` to the
  input record's key, so per-key order carries over to the output topic; a batch handler's
  outputs have no input key: keyless);
* a list or tuple: each element (values or ``Out``);
* anything else (bytes, str, a pydantic model, a JSON-able object): the value of one record.

Keys and values are encoded by the handler's :class:`Target` encoders (``output_key`` /
``output_value``; by default :func:`~lagless.app.codecs.encode`).

:class:`OutputProducer` sends them (acks=all, idempotent: no duplicates or reordering from
producer retries) and :meth:`OutputProducer.send` returns only once the broker acknowledged
every one, raising :class:`OutputError` if any failed. The engine counts the input record as
finished (committable) only after its handler returned: at-least-once end to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Message

from lagless.app.codecs import EncodeError, Encoder, plain
from lagless.engine.intake.topics import check_topics_exist
from lagless.engine.workers.retry import check_result
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.clients import make_consumer, make_producer
from lagless.kafka.offsets import probe_conf

CLOSE_S = 10.0  # how long closing an output producer waits for its records' delivery


class _InputKey:
    def __repr__(self) -> str:
        return "INPUT_KEY"


INPUT_KEY: Final = _InputKey()  # Out's default key: the input record's key
HeaderValue = str | bytes | None
Headers = Mapping[str, HeaderValue] | Sequence[tuple[str, HeaderValue]]


@dataclass(frozen=True, slots=True)
class Out:
    """One output record: ``Out(key, value, headers, topic)``. ``key`` defaults to the input
    record's key (``None`` writes a keyless record), ``value`` to None (a null: a tombstone on a
    compacted topic), ``topic`` to the handler's ``output`` topic."""

    key: object = INPUT_KEY
    value: object = None
    headers: Headers | None = None
    topic: str | None = None

    def __post_init__(self) -> None:
        if self.topic is not None and (not isinstance(self.topic, str) or not self.topic):
            raise ValueError(
                f"Out(topic={self.topic!r}): a topic name is a non-empty str "
                "(None, the default: the handler's output topic)"
            )


@dataclass(frozen=True, slots=True)
class Outgoing:
    """An output record ready to produce."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, HeaderValue]] = field(default_factory=list)


class OutputError(LaglessError):
    """An output record was not acknowledged (the input record's attempt fails)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a handler's outputs go and how they are encoded: its ``output`` topic (the
    default), the ``output_value`` and ``output_key`` encoders, and its name (for errors)."""

    handler: str
    topic: str | None = None
    value: Encoder = plain
    key: Encoder = plain


def outgoing(result: object, input_key: bytes | None, target: Target) -> list[Outgoing]:
    """The records a handler's return value asks for (see the module doc); ``input_key`` is
    what an ``Out`` without a key gets (the input record's key; None for a batch)."""
    check_result(result)  # a coroutine or generator: its work never ran
    if result is None:
        return []
    items = result if isinstance(result, list | tuple) else (result,)
    out: list[Outgoing] = []
    for item in items:
        if item is None:
            continue
        one = item if isinstance(item, Out) else Out(value=item)
        topic = one.topic or target.topic
        if topic is None:
            raise ConfigError(
                f"handler {target.handler} returned a value but has no output topic: "
                "give output=TOPIC or return Out(..., topic=TOPIC)"
            )
        key = input_key if one.key is INPUT_KEY else target.key(one.key, topic)
        headers = _headers(one.headers, topic)
        out.append(Outgoing(topic, key, target.value(one.value, topic), headers))
    return out


def _headers(given: Headers | None, topic: str) -> list[tuple[str, HeaderValue]]:
    """``Out.headers`` as pairs; EncodeError for one the producer would refuse, found before
    any output of the record is produced (a refusal midway would have written the outputs
    before it on every attempt)."""
    pairs: list[Any] = list(given.items()) if isinstance(given, Mapping) else list(given or ())
    for pair in pairs:
        ok = isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)
        if not ok:
            raise EncodeError(
                f"output header {pair!r:.100} for {topic}: give a dict or (name, value) pairs"
            )
        if not (pair[1] is None or isinstance(pair[1], str | bytes)):
            raise EncodeError(
                f"output header {pair[0]!r} for {topic} is {type(pair[1]).__name__}: a header "
                "value is str, bytes or None"
            )
    return [(str(name), value) for name, value in pairs]


class _Pending:
    """Acknowledgements outstanding for one input record."""

    __slots__ = ("errors", "left", "lock", "on_done")

    def __init__(self, count: int, on_done: Any) -> None:
        self.left = count
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.on_done = on_done  # called once, with the error list, on the delivery thread

    def report(self, err: KafkaError | None, msg: Message) -> None:
        with self.lock:
            if err is not None:
                self.errors.append(f"{msg.topic()}: {err.str()}")
            self.left -= 1
            done = self.left == 0
        if done:
            self.on_done(self.errors)


class OutputProducer:
    """One idempotent producer per handler; a daemon thread serves its delivery reports.

    ``linger.ms`` is 0: each record waits for its own acknowledgement, so waiting to fill a
    batch only adds latency (librdkafka still batches what queues while requests are in
    flight). ``overrides`` (the handler's ``output_conf``) win.
    """

    def __init__(self, conf: Mapping[str, Any], overrides: Mapping[str, Any] | None = None):
        self._producer = make_producer(
            {**conf, "acks": "all", "enable.idempotence": True, "linger.ms": 0,
             **(overrides or {})}
        )  # fmt: skip
        self._closed = threading.Event()
        self._known: set[str] = set()  # output topics seen in the cluster's metadata
        self._checking = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="lagless-outputs", daemon=True)
        self._thread.start()

    def _unknown(self, records: list[Outgoing]) -> set[str]:
        return {rec.topic for rec in records} - self._known

    def _check_topics(self, topics: set[str]) -> None:
        """OutputError if one of ``topics`` does not exist. Asked with a metadata request for
        every topic, which creates none: producing to a missing topic would create it on
        brokers that auto-create (Tansu, Kafka's default), so a typo in ``Out(topic=...)``
        would write to a new topic silently."""
        with self._checking:
            topics = topics - self._known
            if not topics:
                return
            try:
                metadata = self._producer.list_topics(timeout=10)
            except KafkaException as exc:
                raise OutputError(f"cannot read the cluster's topics: {exc.args[0]}") from None
            self._known.update(n for n, t in metadata.topics.items() if t.error is None)
        missing = sorted(topics - self._known)
        if missing:
            raise OutputError(
                f"output topic {missing[0]!r} does not exist "
                f"(create it: lagless topic create {missing[0]})"
            )

    def _serve(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(0.05)

    def _produce(self, records: list[Outgoing], pending: _Pending) -> None:
        for rec in records:
            while True:
                try:
                    self._producer.produce(
                        rec.topic, rec.value, key=rec.key, headers=rec.headers or None,
                        on_delivery=pending.report,
                    )  # fmt: skip
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    self._producer.poll(0.01)

    def send(self, records: list[Outgoing], where: str) -> None:
        """Produce ``records``; return once all are acknowledged, else OutputError."""
        if not records:
            return
        if self._unknown(records):
            self._check_topics(self._unknown(records))
        done = threading.Event()
        errors: list[str] = []

        def finished(errs: list[str]) -> None:
            errors.extend(errs)
            done.set()

        self._produce(records, _Pending(len(records), finished))
        done.wait()
        _raise_for(errors, len(records), where)

    async def send_async(self, records: list[Outgoing], where: str) -> None:
        """:meth:`send` for coroutines: awaits the acknowledgements without blocking the loop."""
        if not records:
            return
        if self._unknown(records):
            await asyncio.to_thread(self._check_topics, self._unknown(records))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[str]] = loop.create_future()

        def finished(errs: list[str]) -> None:
            with contextlib.suppress(RuntimeError):  # the engine closed its loop (task cancelled)
                loop.call_soon_threadsafe(_settle, future, errs)

        self._produce(records, _Pending(len(records), finished))
        _raise_for(await future, len(records), where)

    def close(self, timeout: float = CLOSE_S) -> int:
        """Flush and stop; how many records are still undelivered."""
        left: int = self._producer.flush(timeout)
        self._closed.set()
        self._thread.join(timeout=1.0)
        return left


def check_outputs_exist(conf: Mapping[str, Any], topics: Iterable[str]) -> None:
    """ConfigError naming the first output topic that does not exist (a producer would wait
    ``message.timeout.ms`` per record for it, or create it on brokers that auto-create)."""
    wanted = sorted(set(topics))
    if not wanted:
        return
    probe = make_consumer(probe_conf(conf))  # metadata only: never joins nor commits
    try:
        check_topics_exist(probe, wanted, None)
    finally:
        probe.close()


def _settle(future: asyncio.Future[list[str]], errors: list[str]) -> None:
    if not future.done():
        future.set_result(errors)


def _raise_for(errors: list[str], count: int, where: str) -> None:
    if errors:
        raise OutputError(
            f"{len(errors)} of {count} outputs of {where} not acknowledged: {errors[0]}"
        )
