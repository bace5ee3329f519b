"""A librdkafka mock cluster in the test process whose requests can be made to fail.

:class:`lagless.broker.mock.MockCluster` holds its cluster in a child process, shared by a test
session. For a failure no group can be steered into on time (a commit refused by the broker at
one chosen moment), a test makes its own cluster here: librdkafka's mock API
(``rd_kafka_mock_push_request_errors_array``, in the library confluent-kafka ships) answers the
next requests of one kind with the errors given, then serves them again as before. Other
processes reach it over TCP like any cluster while the test runs."""

from __future__ import annotations

import ctypes
import glob
import os
from types import TracebackType

import confluent_kafka

OFFSET_COMMIT = 8  # the OffsetCommit request's API key
PRODUCER = 0  # rd_kafka_type_t


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka confluent-kafka loaded (the same library: one copy in the process)."""
    package = os.path.dirname(confluent_kafka.__file__)
    libs = os.path.join(package, os.pardir, "confluent_kafka.libs")
    found = sorted(glob.glob(os.path.join(libs, "librdkafka*.so*")))
    lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_char_p, ctypes.c_size_t]  # fmt: skip
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [
        ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)
    ]  # fmt: skip
    return lib


class FaultyMock:
    """``with FaultyMock() as mock``: a one-broker mock cluster in this process, at
    ``mock.bootstrap``."""

    def __init__(self) -> None:
        self._lib = _librdkafka()
        self._rk: int | None = None
        self._mock: int | None = None
        self.bootstrap = ""

    def __enter__(self) -> FaultyMock:
        conf = self._lib.rd_kafka_conf_new()
        err = ctypes.create_string_buffer(512)
        if self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512) != 0:
            raise RuntimeError(err.value.decode())
        self._rk = self._lib.rd_kafka_new(PRODUCER, conf, err, 512)  # the cluster's owner
        if not self._rk:
            raise RuntimeError(err.value.decode())
        self._mock = self._lib.rd_kafka_mock_cluster_new(self._rk, 1)
        if not self._mock:
            raise RuntimeError("librdkafka did not create a mock cluster")
        bootstraps: bytes = self._lib.rd_kafka_mock_cluster_bootstraps(self._mock)
        self.bootstrap = bootstraps.decode()
        return self

    def refuse(self, api_key: int, *errors: int) -> None:
        """Answer the next ``len(errors)`` requests of ``api_key`` with these error codes."""
        codes = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mock, api_key, len(errors), codes)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._mock:
            self._lib.rd_kafka_mock_cluster_destroy(self._mock)
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = self._mock = None
