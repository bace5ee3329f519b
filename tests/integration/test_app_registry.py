"""Schema Registry keys and values (the schemaregistry extra), Avro, JSON Schema and Protobuf:
Confluent-framed values decoded into a model or message, outputs written framed the same way
(their schema registered under the output topic's subject), and values not in the wire format,
failing their schema or the model, to the DLQ with the deserializer's reason.

The registry is confluent-kafka's in-memory one (``mock://``), shared by the producing side
and the app through one client; the records travel through the real broker."""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, Field

import lagless
from lagless.engine.results.dlq import H_ERROR
from lagless.errors import ConfigError
from lagless.testing import TestKafka

pytestmark = pytest.mark.integration

avro = pytest.importorskip(
    "confluent_kafka.schema_registry.avro", reason="the schemaregistry extra is not installed"
)
json_schema = pytest.importorskip(
    "confluent_kafka.schema_registry.json_schema", reason="no jsonschema (schemaregistry extra)"
)
protobuf = pytest.importorskip(
    "confluent_kafka.schema_registry.protobuf", reason="the schemaregistry extra lacks protobuf"
)
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from lagless.app import registry  # noqa: E402

TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "until_idle_s": 1.5, "retries": 0,
}  # fmt: skip
AVRO_ORDER = json.dumps({
    "type": "record", "name": "Order",
    "fields": [{"name": "id", "type": "int"}, {"name": "amount", "type": "double"}],
})  # fmt: skip
AVRO_DOUBLED = json.dumps({
    "type": "record", "name": "Doubled",
    "fields": [{"name": "id", "type": "int"}, {"name": "twice", "type": "double"}],
})  # fmt: skip
JSON_ORDER = json.dumps({
    "type": "object", "required": ["id", "amount"],
    "properties": {"id": {"type": "integer"}, "amount": {"type": "number"}},
})  # fmt: skip
JSON_DOUBLED = json.dumps({
    "type": "object", "required": ["id", "twice"],
    "properties": {"id": {"type": "integer"}, "twice": {"type": "number", "exclusiveMinimum": 0}},
})  # fmt: skip


class Order(BaseModel):
    id: int
    amount: float = Field(gt=0)


def new_client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://lagless-{uuid.uuid4().hex[:8]}"})


def order_message_class() -> Any:
    """A Protobuf message class ``Order {int64 id = 1; double amount = 2;}``, built from a
    FileDescriptorProto (as protoc's generated code does)."""
    pool = descriptor_pool.Default()
    name = "lagless.test.Order"
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto(
        name="lagless_test_order.proto", package="lagless.test", syntax="proto3"
    )
    message = proto.message_type.add(name="Order")
    field = descriptor_pb2.FieldDescriptorProto
    message.field.add(name="id", number=1, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    message.field.add(name="amount", number=2, type=field.TYPE_DOUBLE, label=field.LABEL_OPTIONAL)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def dead_letters(kafka: TestKafka, dlq: str, count: int) -> dict[bytes | None, str]:
    letters = kafka.read(dlq, count=count)
    assert len(letters) == count
    return {r.value: (r.header(H_ERROR) or b"").decode() for r in letters}


def framed(schema_id: int, payload: bytes) -> bytes:
    """The Confluent wire format by hand: magic byte 0, the schema id, the payload."""
    return b"\x00" + struct.pack(">I", schema_id) + payload


def test_avro_values_decode_into_a_model_outputs_are_avro_and_bad_ones_go_to_the_dlq(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    client = new_client()
    serialize = avro.AvroSerializer(client, AVRO_ORDER)
    context = SerializationContext(source, MessageField.VALUE)
    good = [serialize({"id": i, "amount": 1.5 * i}, context) for i in range(1, 11)]
    invalid = serialize({"id": 99, "amount": -1.0}, context)  # Avro, but not a valid Order
    lagless_kafka.produce(source, [*good, b"plain bytes", invalid])

    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(source, value=registry.avro(client, model=Order), output=out, dlq=dlq,
                 output_value=registry.avro(client, schema=AVRO_DOUBLED))  # fmt: skip
    def double(order: Order) -> dict[str, Any]:
        return {"id": order.id, "twice": order.amount * 2}

    summary = app.configured(lagless_kafka.settings).run()["double"]

    assert (summary.ok, summary.dlq) == (10, 2)
    read = avro.AvroDeserializer(client)
    out_context = SerializationContext(out, MessageField.VALUE)
    docs = [read(r.value, out_context) for r in lagless_kafka.read(out, count=10)]
    assert sorted((d["id"], d["twice"]) for d in docs) == [(i, 3.0 * i) for i in range(1, 11)]
    assert f"{out}-value" in client.get_subjects()  # registered under the output's subject
    reasons = sorted(dead_letters(lagless_kafka, dlq, 2).values())
    assert reasons[0].startswith("not Avro from the registry") and "magic byte" in reasons[0]
    assert reasons[1].startswith("not a valid Order: amount: Input should be greater than 0")


def test_json_schema_values_are_validated_and_outputs_written_against_their_schema(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    client = new_client()
    serialize = json_schema.JSONSerializer(JSON_ORDER, client)
    good = [serialize({"id": i, "amount": i / 2}, SerializationContext(source, MessageField.VALUE))
            for i in range(1, 11)]  # fmt: skip
    schema_id = struct.unpack(">I", good[0][1:5])[0]
    off_schema = framed(schema_id, b'{"id": "x", "amount": 1}')  # framed, fails the schema
    lagless_kafka.produce(source, [*good, b'{"id": 1, "amount": 1}', off_schema])

    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(source, value=registry.json_schema(client, model=Order), output=out, dlq=dlq,
                 output_value=registry.json_schema(client, schema=JSON_DOUBLED))  # fmt: skip
    def double(order: Order) -> dict[str, Any]:
        twice = -1.0 if order.id == 7 else order.amount * 2  # 7's output fails its schema
        return {"id": order.id, "twice": twice}

    summary = app.configured(lagless_kafka.settings).run()["double"]

    assert (summary.ok, summary.dlq) == (9, 3)
    read = json_schema.JSONDeserializer(None, schema_registry_client=client)
    out_context = SerializationContext(out, MessageField.VALUE)
    docs = [read(r.value, out_context) for r in lagless_kafka.read(out, count=9)]
    assert sorted(d["id"] for d in docs) == [i for i in range(1, 11) if i != 7]
    reasons = dead_letters(lagless_kafka, dlq, 3)
    assert "Invalid magic byte" in reasons[b'{"id": 1, "amount": 1}']
    assert reasons[off_schema].startswith("not JSON Schema from the registry: 'x' is not of type")
    assert reasons[good[6]] == (
        f"cannot write JSON Schema to {out}: -1.0 is less than or equal to the minimum of 0"
    )


def test_protobuf_values_decode_into_messages_and_outputs_are_protobuf(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    client = new_client()
    order_pb = order_message_class()
    serialize = protobuf.ProtobufSerializer(order_pb, client, {"use.deprecated.format": False})
    context = SerializationContext(source, MessageField.VALUE)
    good = [serialize(order_pb(id=i, amount=i * 1.25), context) for i in range(1, 11)]
    corrupt = good[0][:6] + b"\xff\xff\xff"
    lagless_kafka.produce(source, [*good, b"plain bytes", corrupt])

    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    codec = registry.protobuf(client, order_pb)

    @app.handler(source, value=codec, output=out, output_value=codec, dlq=dlq)
    def double(order: Any) -> Any:
        assert isinstance(order, order_pb)
        return order_pb(id=order.id, amount=order.amount * 2)

    summary = app.configured(lagless_kafka.settings).run()["double"]

    assert (summary.ok, summary.dlq) == (10, 2)
    read = protobuf.ProtobufDeserializer(order_pb, {"use.deprecated.format": False})
    out_context = SerializationContext(out, MessageField.VALUE)
    orders = [read(r.value, out_context) for r in lagless_kafka.read(out, count=10)]
    assert sorted((m.id, m.amount) for m in orders) == [(i, i * 2.5) for i in range(1, 11)]
    reasons = dead_letters(lagless_kafka, dlq, 2)
    assert "Invalid magic byte" in reasons[b"plain bytes"]
    assert reasons[corrupt].startswith("not Protobuf from the registry: Error parsing message")


def test_registry_codec_misuse_is_one_line() -> None:
    with pytest.raises(ConfigError, match="use http"):
        registry.avro("ftp://registry")
    with pytest.raises(ConfigError, match="field='body': value or key"):
        registry.json_schema("mock://x", field="body")
    app = lagless.App(group="g")
    with pytest.raises(ConfigError, match=r"output_value=registry.avro\(...\): give the schema"):
        app.handler("t", dlq="d", output_value=registry.avro("mock://x"))(lambda v: v)
