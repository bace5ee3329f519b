"""``--value protobuf``'s pure parts: the wire format's message indexes (against
confluent-kafka's own serializer), the descriptor -> Spark schema mapping and what it refuses,
decoding with the reasons a value is rejected, and the options each value format takes."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T  # noqa: N812

from lagless.errors import ConfigError
from lagless.spark.pipeline import PipelineConfig
from lagless.spark.pipeline.protobuf import (
    BROKEN_PROTOBUF,
    ProtobufDecoder,
    fetch_schemas,
    message_indexes,
    record_schema,
)
from lagless.spark.pipeline.registry import UNKNOWN_SCHEMA
from tests.integration.spark_helpers.proto import PAYMENT_PROTO, file_proto, message_class

PAYMENT_STRUCT = T.StructType(
    [
        T.StructField("id", T.StringType()),
        T.StructField("amount", T.DoubleType()),
        T.StructField("currency", T.StringType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("status", T.StringType()),
        T.StructField("tags", T.ArrayType(T.StringType())),
        T.StructField("attrs", T.MapType(T.StringType(), T.LongType())),
        T.StructField(
            "fee",
            T.StructType(
                [T.StructField("units", T.LongType()), T.StructField("currency", T.StringType())]
            ),
        ),
        T.StructField("attempt", T.IntegerType()),
        T.StructField("big", T.DecimalType(20, 0)),
        T.StructField(
            "lines",
            T.ArrayType(
                T.StructType(
                    [T.StructField("sku", T.StringType()), T.StructField("qty", T.IntegerType())]
                )
            ),
        ),
        T.StructField("note", T.StringType()),
    ]
)


def serialize(registry: Any, message: Any, topic: str = "pay") -> bytes:
    serializer = ProtobufSerializer(type(message), registry, {})
    data: bytes = serializer(message, SerializationContext(topic, MessageField.VALUE))
    return data


def register(registry: Any, subject: str, text: str) -> None:
    """A schema registered as confluent's serializer does: a base64 FileDescriptorProto."""
    encoded = base64.b64encode(file_proto(text).SerializeToString()).decode()
    registry.register_schema(subject, Schema(encoded, "PROTOBUF"))


@pytest.mark.parametrize(
    ("name", "indexes", "encoded"),
    [
        ("shop.Money", [0], b"\x00"),  # [0]: one 0 byte
        ("shop.Payment", [1], b"\x02\x02"),  # zigzag count 1, zigzag index 1
        ("shop.Payment.Line", [1, 0], b"\x04\x02\x00"),
    ],
)
def test_message_indexes_read_as_confluents_serializer_writes_them(
    name: str, indexes: list[int], encoded: bytes
) -> None:
    registry = SchemaRegistryClient.new_client({"url": f"mock://indexes-{name}"})
    cls = message_class(name)
    value = serialize(registry, cls())
    found, start = message_indexes(value)
    assert found == indexes
    assert cls.FromString(value[start:]) == cls()
    assert value[5:start] == encoded


def test_message_indexes_that_do_not_parse_say_why() -> None:
    assert message_indexes(b"\x00\x00\x00\x00\x01\x00rest") == ([0], 6)
    assert message_indexes(b"\x00\x00\x00\x00\x01\x06\x02\x04\x06") == ([1, 2, 3], 9)
    with pytest.raises(ValueError, match="truncated varint"):
        message_indexes(b"\x00\x00\x00\x00\x01")
    with pytest.raises(ValueError, match="truncated varint"):
        message_indexes(b"\x00\x00\x00\x00\x01\x04\x02")  # two indexes announced, one there
    with pytest.raises(ValueError, match="count -1 is out of range"):
        message_indexes(b"\x00\x00\x00\x00\x01\x01")
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        message_indexes(b"\x00\x00\x00\x00\x01" + b"\xff" * 11)


def test_the_descriptor_maps_to_spark_types() -> None:
    registry = SchemaRegistryClient.new_client({"url": "mock://mapping"})
    register(registry, "pay-value", PAYMENT_PROTO)
    schemas = fetch_schemas(registry, "pay-value", "Payment")
    assert schemas.message == "shop.Payment"
    schema, _ = record_schema(schemas, "pay-value")
    assert schema.struct == PAYMENT_STRUCT
    # the default record message is the file's first
    assert fetch_schemas(registry, "pay-value", None).message == "shop.Money"
    with pytest.raises(ConfigError, match=r"no message 'Refund' in the schema \(shop.Money, "):
        fetch_schemas(registry, "pay-value", "Refund")


UNSUPPORTED = {
    "duration": (
        'dependency: "google/protobuf/duration.proto"\n'
        'field { name: "took" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE '
        'type_name: ".google.protobuf.Duration" }',
        r"field took \(google.protobuf.Duration\) is not supported",
    ),
    "recursive": (
        'field { name: "child" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE '
        'type_name: ".t.Node" }',
        r"field child \(t.Node\) is recursive",
    ),
    "reserved": (
        'field { name: "kafka_offset" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }',
        "field 'kafka_offset' is a name the pipeline adds itself",
    ),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_what_spark_cannot_hold_is_refused_in_one_line_naming_the_field(case: str) -> None:
    field, message = UNSUPPORTED[case]
    dependency = field.split("\n")[0] if field.startswith("dependency") else ""
    fields = field.split("\n")[-1]
    text = (
        f'name: "t.proto" package: "t" syntax: "proto3" {dependency}\n'
        'message_type { name: "Node" '
        'field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING } '
        f"{fields} }}"
    )
    registry = SchemaRegistryClient.new_client({"url": f"mock://unsupported-{case}"})
    register(registry, "t-value", text)
    with pytest.raises(ConfigError, match=message) as info:
        record_schema(fetch_schemas(registry, "t-value", None), "t-value")
    assert "\n" not in str(info.value)


def test_values_decode_or_say_why_not() -> None:
    registry = SchemaRegistryClient.new_client({"url": "mock://decode"})
    cls = message_class()
    payment = cls(id="p1", amount=2.5, currency="EUR", status=1, tags=["a", "b"], big=2**64 - 1)
    payment.ts.seconds, payment.ts.nanos = 1767225600, 250_000_000
    payment.attrs["tries"] = 3
    payment.fee.units = 7
    payment.lines.add(sku="s1", qty=2)
    value = serialize(registry, payment)
    schemas = fetch_schemas(registry, "pay-value", "shop.Payment")
    decoder = ProtobufDecoder(schemas)
    record, cls_, _ = decoder.decode(value)
    assert cls_ is None
    assert record == {
        "id": "p1", "amount": 2.5, "currency": "EUR",
        "ts": datetime(2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC), "status": "PAID",
        "tags": ["a", "b"], "attrs": {"tries": 3}, "fee": {"units": 7, "currency": ""},
        "attempt": None, "big": Decimal(2**64 - 1), "lines": [{"sku": "s1", "qty": 2}],
        "note": None,
    }  # fmt: skip
    schema_id = value[1:5]
    rejected = {
        b"{json}": (BROKEN_PROTOBUF, "value is not in the Schema Registry's wire format"),
        b"\x00" + schema_id: (BROKEN_PROTOBUF, "message indexes: truncated varint"),
        b"\x00\x00\x00\x03\x99" + value[5:]: (
            UNKNOWN_SCHEMA,
            "schema id 921 is not a version of the subject",
        ),
        b"\x00" + schema_id + b"\x02\x08" + value[7:]: (
            BROKEN_PROTOBUF,
            "message index [4] is no message of the schema",
        ),
        b"\x00" + schema_id + b"\x00" + value[7:]: (
            BROKEN_PROTOBUF,
            "message shop.Money is not the record's (shop.Payment)",
        ),
    }
    for bad, reason in rejected.items():
        assert decoder.decode(bad)[1:] == reason
    truncated = decoder.decode(value[:-3])
    assert truncated[1] == BROKEN_PROTOBUF and truncated[2].startswith("cannot decode: ")
    assert decoder.decode(None)[1] == BROKEN_PROTOBUF


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"value": "protobuf"}, "--value protobuf needs --registry URL"),
        ({"value": "protobuf", "registry": "mock://x", "value_schema": "a INT"}, "--schema is"),
        ({"value": "json", "value_schema": "a INT", "subject": "s"}, "--registry and --subject"),
        ({"value": "raw", "registry": "mock://x"}, "--registry and --subject are for"),
        ({"value": "avro", "registry": "mock://x", "message": "M"}, "--message is for --value"),
    ],
)
def test_each_value_option_is_refused_with_the_formats_that_do_not_use_it(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.build(
            topic="t", output="/tmp/o", checkpoint="/tmp/c",
            kafka={"bootstrap.servers": "localhost:1"}, **values,
        )  # fmt: skip


def test_a_proto2_record_missing_a_required_field_is_rejected() -> None:
    registry = SchemaRegistryClient.new_client({"url": "mock://required"})
    register(
        registry, "r-value",
        'name: "r.proto" package: "r" syntax: "proto2" message_type { name: "R" '
        'field { name: "a" number: 1 label: LABEL_REQUIRED type: TYPE_STRING } '
        'field { name: "b" number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 } }',
    )  # fmt: skip
    decoder = ProtobufDecoder(fetch_schemas(registry, "r-value", None))
    framed = b"\x00\x00\x00\x00\x01\x00"
    assert decoder.decode(framed + b"\x10\x05")[1:] == (
        BROKEN_PROTOBUF,
        "required fields missing: a",
    )
    assert decoder.decode(framed + b"\x0a\x01x") == ({"a": "x", "b": None}, None, None)


def test_subjects_that_are_no_usable_protobuf_schema_are_refused_in_one_line() -> None:
    registry = SchemaRegistryClient.new_client({"url": "mock://refused"})
    registry.register_schema("text-value", Schema('syntax = "proto3"; message A {}', "PROTOBUF"))
    registry.register_schema("avro-value", Schema('{"type": "string"}', "AVRO"))
    register(
        registry, "import-value",
        'name: "e.proto" syntax: "proto3" dependency: "other/thing.proto" '
        'message_type { name: "E" }',
    )  # fmt: skip
    refused = {
        "text-value": "version 1: not a serialized FileDescriptorProto",
        "avro-value": r"is not Protobuf \(version 1 is AVRO\)",
        "import-value": "import 'other/thing.proto' is neither a reference of the schema nor",
    }
    for subject, message in refused.items():
        with pytest.raises(ConfigError, match=message):
            record_schema(fetch_schemas(registry, subject, None), subject)
    with pytest.raises(ConfigError, match="--registry 'not a url': Invalid url"):
        fetch_schemas("not a url", "pay-value", None)


def test_a_schema_importing_another_subjects_file_decodes_through_its_reference() -> None:
    from google.protobuf import descriptor_pool, message_factory

    common = (
        'name: "common/money.proto" package: "common" syntax: "proto3" '
        'message_type { name: "Money" field { name: "units" number: 1 type: TYPE_INT64 } }'
    )
    pay = (
        'name: "pay.proto" package: "p" syntax: "proto3" dependency: "common/money.proto" '
        'message_type { name: "Pay" field { name: "id" number: 1 type: TYPE_STRING } '
        'field { name: "fee" number: 2 type: TYPE_MESSAGE type_name: ".common.Money" } }'
    )
    pool = descriptor_pool.DescriptorPool()
    for text in (common, pay):
        pool.Add(file_proto(text))
    pay_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("p.Pay"))
    registry = SchemaRegistryClient.new_client({"url": "mock://references"})
    value = serialize(registry, pay_class(id="a", fee={"units": 4}), topic="t")
    assert [r.name for r in registry.get_latest_version("t-value").schema.references] == [
        "common/money.proto"
    ]  # registered by the serializer as its own subject
    schemas = fetch_schemas(registry, "t-value", None)
    schema, _ = record_schema(schemas, "t-value")
    assert schema.struct.simpleString() == "struct<id:string,fee:struct<units:bigint>>"
    assert ProtobufDecoder(schemas).decode(value) == ({"id": "a", "fee": {"units": 4}}, None, None)
