"""A pytest plugin shipped with lagless: test an app end to end against a real broker.

Installed with lagless (entry point ``pytest11``), so these fixtures are there in any test::

    def test_enricher(lagless_kafka, lagless_topic):
        out = lagless_kafka.topic()
        app = make_app(lagless_topic, out)                      # your App
        lagless_kafka.produce(lagless_topic, [b'{"id": 1}'])
        with app.configured(lagless_kafka.settings, until_idle_s=1).running():
            app_records = lagless_kafka.read(out, count=1)

* ``lagless_bootstrap`` (session): ``HOST:PORT`` of the broker: ``LAGLESS_TEST_BOOTSTRAP`` if
  set (e.g. a real Apache Kafka), else an embedded broker started on a free port for the
  session and stopped after it.
* ``lagless_kafka``: a :class:`TestKafka` on that broker: ``settings``, ``conf``,
  ``topic(partitions=1)`` (a fresh topic), ``produce(topic, values, key=...)``,
  ``read(topic, count=..., timeout=...)`` (records as :class:`lagless.Record`).
* ``lagless_topic``: a fresh topic with one partition.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the plugin loads in every pytest run: lagless itself loads on first use
    from lagless.config import KafkaSettings
    from lagless.engine.record import Record


@dataclass(frozen=True)
class TestKafka:
    """A broker for a test: fresh topics, produce, read back."""

    __test__ = False  # not a test class

    bootstrap: str

    @property
    def settings(self) -> KafkaSettings:
        from lagless.config import KafkaSettings

        return KafkaSettings(bootstrap=self.bootstrap)

    @property
    def conf(self) -> dict[str, Any]:
        return self.settings.to_librdkafka()

    def topic(self, partitions: int = 1, prefix: str = "test") -> str:
        """Create a fresh topic; its name."""
        from lagless.kafka.compat import create_topic

        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        create_topic(self.conf, name, partitions)
        return name

    def group(self, prefix: str = "test") -> str:
        """A fresh consumer group id."""
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    def produce(self, topic: str, values: Iterable[object], key: object = None) -> int:
        """Produce each value (bytes, str, a pydantic model, JSON-able) and wait for every
        acknowledgement; how many. ``key`` is the key of every record."""
        from lagless.app.codecs import encode
        from lagless.kafka.clients import make_producer

        if isinstance(values, str | bytes | bytearray | Mapping):
            raise TypeError(
                f"produce({topic!r}, {type(values).__name__}): give a list of values "
                "(one value would be produced character by character, or key by key)"
            )

        producer = make_producer({**self.conf, "acks": "all", "linger.ms": 5})
        failed: list[str] = []

        def report(err: Any, _msg: Any) -> None:
            if err is not None:
                failed.append(str(err))

        count = 0
        for value in values:
            producer.produce(topic, encode(value), key=encode(key), on_delivery=report)
            count += 1
        left = producer.flush(30)
        assert not left and not failed, f"produce to {topic}: {left} undelivered, {failed[:1]}"
        return count

    def read(self, topic: str, count: int | None = None, timeout: float = 30.0) -> list[Record]:
        """Every record of ``topic`` now; with ``count``, wait up to ``timeout`` s for that many
        (fewer after the timeout: assert on the result)."""
        from lagless.engine.record import Record
        from lagless.kafka.reader import read_all

        deadline = time.monotonic() + timeout
        while True:
            records = [Record.from_message(m) for m in read_all(self.conf, topic, timeout)]
            if count is None or len(records) >= count or time.monotonic() >= deadline:
                return records
            time.sleep(0.2)


@pytest.fixture(scope="session")
def lagless_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``HOST:PORT``: LAGLESS_TEST_BOOTSTRAP, else an embedded broker for the session."""
    external = os.environ.get("LAGLESS_TEST_BOOTSTRAP")
    if external:
        yield external
        return
    from lagless.broker.embedded import EmbeddedBroker, free_port

    broker = EmbeddedBroker(tmp_path_factory.mktemp("lagless-broker"))
    state = broker.start(port=free_port())
    try:
        yield state.bootstrap
    finally:
        broker.stop()


@pytest.fixture
def lagless_kafka(lagless_bootstrap: str) -> TestKafka:
    """The test broker: fresh topics, produce, read back."""
    return TestKafka(lagless_bootstrap)


@pytest.fixture
def lagless_topic(lagless_kafka: TestKafka) -> str:
    """A fresh topic with one partition."""
    return lagless_kafka.topic()
