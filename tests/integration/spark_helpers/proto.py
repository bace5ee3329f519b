"""A user's Protobuf schema for the general pipeline's tests, as the ``.proto`` below compiles:

```
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Money { int64 units = 1; string currency = 2; }
message Payment {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  double amount = 2;
  string currency = 3;
  google.protobuf.Timestamp ts = 4;
  Status status = 5;
  repeated string tags = 6;
  map<string, int64> attrs = 7;
  Money fee = 8;
  optional int32 attempt = 9;
  uint64 big = 10;
  repeated Line lines = 11;
  google.protobuf.StringValue note = 12;
}
```

(no ``protoc`` here: the compiled ``FileDescriptorProto`` is written in text format). The
record message is ``Payment``, the file's second: ``--message Payment``. Version 2 adds
``string channel = 13;`` to it."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

PAYMENT_PROTO = """
name: "shop/payment.proto"
package: "shop"
dependency: "google/protobuf/timestamp.proto"
dependency: "google/protobuf/wrappers.proto"
syntax: "proto3"
message_type {
  name: "Money"
  field { name: "units" number: 1 type: TYPE_INT64 }  # label: LABEL_OPTIONAL by default
  field { name: "currency" number: 2 type: TYPE_STRING }
}
message_type {
  name: "Payment"
  field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "amount" number: 2 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
  field { name: "currency" number: 3 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "ts" number: 4 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".google.protobuf.Timestamp" }
  field { name: "status" number: 5 label: LABEL_OPTIONAL type: TYPE_ENUM
          type_name: ".shop.Payment.Status" }
  field { name: "tags" number: 6 label: LABEL_REPEATED type: TYPE_STRING }
  field { name: "attrs" number: 7 label: LABEL_REPEATED type: TYPE_MESSAGE
          type_name: ".shop.Payment.AttrsEntry" }
  field { name: "fee" number: 8 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".shop.Money" }
  field { name: "attempt" number: 9 label: LABEL_OPTIONAL type: TYPE_INT32
          oneof_index: 0 proto3_optional: true }
  field { name: "big" number: 10 label: LABEL_OPTIONAL type: TYPE_UINT64 }
  field { name: "lines" number: 11 label: LABEL_REPEATED type: TYPE_MESSAGE
          type_name: ".shop.Payment.Line" }
  field { name: "note" number: 12 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".google.protobuf.StringValue" }
  nested_type {
    name: "Line"
    field { name: "sku" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "qty" number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 }
  }
  nested_type {
    name: "AttrsEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
    options { map_entry: true }
  }
  enum_type {
    name: "Status"
    value { name: "NEW" number: 0 }
    value { name: "PAID" number: 1 }
  }
  oneof_decl { name: "_attempt" }
}
"""


PAYMENT_PROTO_V2 = PAYMENT_PROTO.replace(
    '  nested_type {\n    name: "Line"',
    '  field { name: "channel" number: 13 label: LABEL_OPTIONAL type: TYPE_STRING }\n'
    '  nested_type {\n    name: "Line"',
)


def file_proto(text: str = PAYMENT_PROTO) -> Any:
    return text_format.Parse(text, descriptor_pb2.FileDescriptorProto())


def message_class(name: str = "shop.Payment", text: str = PAYMENT_PROTO) -> Any:
    """The message class, as ``protoc``'s generated module would give it."""
    from google.protobuf import timestamp_pb2, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file_proto(text))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
