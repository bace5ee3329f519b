"""Kafka headers packed into one string per record, and unpacked in Spark.

Spark's ``headers`` column (``array<struct<key: string, value: binary>>``) costs every record
a nested array in the JVM's rows (an array, a struct and two fields per header) even when
nothing downstream looks at it. The ``lagless-kafka`` option ``packedHeaders`` adds the
``packed_headers`` column instead: the same headers as one string, which the JVM copies in
one piece, and which :func:`unpack` turns back into Spark's type (only where it is needed,
e.g. for dead letters).

The packed form, null for a record without headers::

    hex(key) ":" (hex(value) | "~")  ["," hex(key) ":" (hex(value) | "~") ...]

in the records' order, ``~`` for a null value, lower-case hex of the key's UTF-8 bytes and of
the value's bytes (an empty key or value is an empty hex string). Keys may repeat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

PACKED_COLUMN = "packed_headers"
NULL_VALUE = "~"
PAIR_SEPARATOR = ":"
HEADER_SEPARATOR = ","
HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def pack(headers: pa.Array) -> pa.Array:
    """Spark's ``array<struct<key, value>>`` headers (Arrow, one list per record, null for
    none) as packed strings, one per record, null where the list is null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(headers, pa.ListArray):
        raise TypeError(f"headers must be a list array, not {headers.type}")
    pairs = headers.flatten()  # the headers of the non-null lists, in order
    keys = _hex(pairs.field("key"))
    values = pc.fill_null(_hex(pairs.field("value")), NULL_VALUE)
    joined = pc.binary_join_element_wise(keys, values, PAIR_SEPARATOR)
    starts = pc.subtract(headers.offsets, headers.offsets[0])
    per_record = pa.ListArray.from_arrays(starts, joined, mask=headers.is_null())
    packed: pa.Array = pc.binary_join(per_record, HEADER_SEPARATOR)
    return packed


def _hex(column: pa.Array) -> pa.Array:
    """Lower-case hex of each value of a string/binary array (nulls stay null), by one
    ``take`` from a table of the 256 byte values' hex pairs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.cast(pa.binary())
    if column.offset:  # a slice: a copy of its own (its buffers start before it)
        column = pa.concat_arrays([column])
    n = len(column)
    validity, offset_buffer, data = column.buffers()
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, offset_buffer])
    first, last = offsets[0].as_py(), offsets[n].as_py()
    raw = pa.Array.from_buffers(pa.uint8(), last - first, [None, data], offset=first)
    out_data = pc.take(_hex_table(), raw).buffers()[1]
    out_offsets = pc.multiply(pc.subtract(offsets, first), 2).cast(pa.int32()).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(), n, [validity, out_offsets, out_data], null_count=column.null_count
    )


_TABLE: list[pa.Array] = []


def _hex_table() -> pa.Array:
    if not _TABLE:
        import pyarrow as pa

        _TABLE.append(pa.array([f"{b:02x}".encode() for b in range(256)], pa.binary(2)))
    return _TABLE[0]


def unpack(packed: Column) -> Column:
    """Spark's ``array<struct<key: string, value: binary>>`` from a ``packed_headers``
    column (null stays null)."""
    from pyspark.sql import functions as F  # noqa: N812

    def header(text: Column) -> Column:
        key = F.substring_index(text, PAIR_SEPARATOR, 1)
        value = F.substring_index(text, PAIR_SEPARATOR, -1)
        return F.struct(
            F.decode(F.unhex(key), "UTF-8").alias("key"),
            F.when(value != NULL_VALUE, F.unhex(value)).alias("value"),
        )

    return F.transform(F.split(packed, HEADER_SEPARATOR), header).cast(HEADERS_TYPE)
