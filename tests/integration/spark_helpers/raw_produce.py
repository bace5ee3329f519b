"""Records whose header keys are any bytes (confluent-kafka's Producer takes only str keys):
produced through librdkafka's C API with ctypes, the librdkafka confluent-kafka loaded."""

from __future__ import annotations

import ctypes

from lagless.kafka.native import librdkafka_path

# rd_kafka_vtype_t values of rd_kafka_producev's arguments
_END, _TOPIC, _PARTITION, _VALUE, _MSGFLAGS, _HEADERS = 0, 1, 3, 4, 7, 10
_F_COPY = 2  # RD_KAFKA_MSG_F_COPY


def _lib() -> ctypes.CDLL:
    path = librdkafka_path()
    assert path is not None, "librdkafka is loaded by confluent-kafka"
    lib = ctypes.CDLL(path)
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_headers_new.restype = ctypes.c_void_p
    lib.rd_kafka_headers_new.argtypes = [ctypes.c_size_t]
    lib.rd_kafka_header_add.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_ssize_t,
        ctypes.c_char_p,
        ctypes.c_ssize_t,
    ]
    lib.rd_kafka_flush.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    return lib


def produce_raw_headers(
    bootstrap: str, topic: str, records: list[list[tuple[bytes, bytes]]]
) -> None:
    """One record per list of (key, value) header pairs, value b"v", to partition 0."""
    lib = _lib()
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    assert lib.rd_kafka_conf_set(conf, b"bootstrap.servers", bootstrap.encode(), err, 512) == 0
    producer = lib.rd_kafka_new(0, conf, err, 512)
    assert producer, err.value
    try:
        for headers in records:
            hdrs = lib.rd_kafka_headers_new(len(headers))
            for key, value in headers:
                lib.rd_kafka_header_add(hdrs, key, len(key), value, len(value))
            rc = lib.rd_kafka_producev(
                ctypes.c_void_p(producer),
                ctypes.c_int(_TOPIC),
                ctypes.c_char_p(topic.encode()),
                ctypes.c_int(_PARTITION),
                ctypes.c_int32(0),
                ctypes.c_int(_MSGFLAGS),
                ctypes.c_int(_F_COPY),
                ctypes.c_int(_VALUE),
                ctypes.c_char_p(b"v"),
                ctypes.c_size_t(1),
                ctypes.c_int(_HEADERS),
                ctypes.c_void_p(hdrs),
                ctypes.c_int(_END),
            )
            assert rc == 0, rc
        assert lib.rd_kafka_flush(ctypes.c_void_p(producer), 20_000) == 0
    finally:
        lib.rd_kafka_destroy(ctypes.c_void_p(producer))
