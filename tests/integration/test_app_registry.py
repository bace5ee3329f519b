"""Schema Registry values (the schemaregistry extra): Confluent-framed Avro decoded into a
model; bytes not in the wire format and records failing the model go to the DLQ with why.

The registry is confluent-kafka's in-memory one (``mock://``), shared by the producing side
and the app through one client; the records travel through the real broker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

import lagless
from lagless.engine.dlq import H_ERROR
from lagless.errors import ConfigError
from lagless.testing import TestKafka

pytestmark = pytest.mark.integration

avro = pytest.importorskip(
    "confluent_kafka.schema_registry.avro", reason="the schemaregistry extra is not installed"
)
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from lagless.app import registry  # noqa: E402

SCHEMA = json.dumps({
    "type": "record", "name": "Order",
    "fields": [{"name": "id", "type": "int"}, {"name": "amount", "type": "double"}],
})  # fmt: skip


class Order(BaseModel):
    id: int
    amount: float = Field(gt=0)


def test_avro_values_decode_into_a_model_and_bad_ones_go_to_the_dlq(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    client = SchemaRegistryClient.new_client({"url": "mock://lagless-test"})
    serialize = avro.AvroSerializer(client, SCHEMA)
    context = SerializationContext(source, MessageField.VALUE)
    good = [serialize({"id": i, "amount": 1.5 * i}, context) for i in range(1, 11)]
    invalid = serialize({"id": 99, "amount": -1.0}, context)  # Avro, but not a valid Order
    lagless_kafka.produce(source, [*good, b"plain bytes", invalid])

    app = lagless.App(group=lagless_kafka.group(), session_timeout_ms=6000,
                      heartbeat_interval_ms=1500, until_idle_s=1.5)  # fmt: skip

    @app.handler(source, value=registry.avro(client, model=Order), output=out, dlq=dlq)
    def double(order: Order) -> dict[str, Any]:
        return {"id": order.id, "twice": order.amount * 2}

    summary = app.configured(lagless_kafka.settings).run()["double"]

    assert (summary.ok, summary.dlq) == (10, 2)
    docs = [json.loads(r.value or b"") for r in lagless_kafka.read(out, count=10)]
    assert sorted(d["id"] for d in docs) == list(range(1, 11))
    assert {d["twice"] for d in docs} == {3.0 * i for i in range(1, 11)}
    reasons = sorted((r.header(H_ERROR) or b"").decode() for r in lagless_kafka.read(dlq, 2))
    assert reasons[0].startswith("not Avro from the registry") and "magic byte" in reasons[0]
    assert reasons[1].startswith("not a valid Order: amount: Input should be greater than 0")


def test_a_registry_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match="use http"):
        registry.avro("ftp://registry")
