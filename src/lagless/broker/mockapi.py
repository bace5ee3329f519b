"""librdkafka's mock-cluster C API through ctypes: one mock cluster in this process.

The librdkafka bundled in confluent-kafka's wheel (``confluent_kafka.libs/librdkafka-*.so.1``)
exports the mock API (``nm -D`` lists the ``rd_kafka_mock_*`` symbols). Loading that same file
keeps one copy of librdkafka in the process. :class:`MockApi` owns an ``rd_kafka_t`` handle (a
mock cluster needs one to live in) and the cluster, and drives what the Kafka protocol cannot on
this cluster: topics with any partition count, the KIP-848 coordinator's session and heartbeat,
the classic group's initial rebalance delay, a broker's round-trip time, a broker down or up, and
errors pushed for the next requests of one kind. Other processes reach its brokers over TCP at
:attr:`MockApi.bootstrap`.
"""

from __future__ import annotations

import ctypes
import glob
import os
from types import TracebackType

import confluent_kafka

from lagless.errors import ClusterError

PRODUCER = 0  # rd_kafka_type_t
TOPIC_ALREADY_EXISTS = 36  # rd_kafka_resp_err_t
_P = ctypes.c_void_p
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "rd_kafka_conf_new": (_P, []),
    "rd_kafka_conf_set": (
        ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    ),
    "rd_kafka_new": (_P, [ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_size_t]),
    "rd_kafka_destroy": (None, [_P]),
    "rd_kafka_err2str": (ctypes.c_char_p, [ctypes.c_int]),
    "rd_kafka_mock_cluster_new": (_P, [_P, ctypes.c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [_P]),
    "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [_P]),
    "rd_kafka_mock_topic_create": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
    "rd_kafka_mock_topic_delete": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "rd_kafka_mock_broker_set_rtt": (ctypes.c_int, [_P, ctypes.c_int32, ctypes.c_int]),
    "rd_kafka_mock_broker_set_down": (ctypes.c_int, [_P, ctypes.c_int32]),
    "rd_kafka_mock_broker_set_up": (ctypes.c_int, [_P, ctypes.c_int32]),
    "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [_P, ctypes.c_int32]),
    "rd_kafka_mock_set_group_consumer_session_timeout_ms": (None, [_P, ctypes.c_int]),
    "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": (None, [_P, ctypes.c_int]),
    "rd_kafka_mock_push_request_errors_array": (
        None, [_P, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
    ),
}  # fmt: skip


def librdkafka() -> ctypes.CDLL:
    """The librdkafka confluent-kafka loaded (the same file: one copy in the process), with the
    argument and result types of the calls used here."""
    package = os.path.dirname(confluent_kafka.__file__)
    libs = os.path.join(package, os.pardir, "confluent_kafka.libs")
    found = sorted(glob.glob(os.path.join(libs, "librdkafka*.so*")))
    lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
    for name, (restype, argtypes) in _SIGNATURES.items():
        func = getattr(lib, name)
        func.restype = restype
        func.argtypes = argtypes
    return lib


class MockApi:
    """``with MockApi(brokers) as mock``: a mock cluster in this process, at ``mock.bootstrap``.

    Every setter raises :class:`~lagless.errors.ClusterError` with librdkafka's reason when the
    mock refuses."""

    def __init__(self, brokers: int = 1) -> None:
        if brokers < 1:
            raise ClusterError("a mock cluster needs at least one broker")
        self.brokers = brokers
        self._lib = librdkafka()
        self._rk: int | None = None
        self._mock: int | None = None
        self.bootstrap = ""

    def __enter__(self) -> MockApi:
        conf = self._lib.rd_kafka_conf_new()
        err = ctypes.create_string_buffer(512)
        if self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512) != 0:
            raise ClusterError(err.value.decode())
        self._rk = self._lib.rd_kafka_new(PRODUCER, conf, err, 512)  # the cluster's owner
        if not self._rk:
            raise ClusterError(f"librdkafka did not create a client: {err.value.decode()}")
        self._mock = self._lib.rd_kafka_mock_cluster_new(self._rk, self.brokers)
        if not self._mock:
            self.close()
            raise ClusterError("librdkafka did not create a mock cluster")
        bootstraps: bytes = self._lib.rd_kafka_mock_cluster_bootstraps(self._mock)
        self.bootstrap = bootstraps.decode()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        mock, rk, self._mock, self._rk = self._mock, self._rk, None, None
        if mock:
            self._lib.rd_kafka_mock_cluster_destroy(mock)
        if rk:
            self._lib.rd_kafka_destroy(rk)

    def _cluster(self) -> int:
        if not self._mock:
            raise ClusterError("the mock cluster is not running")
        return self._mock

    def _check(self, code: int, what: str) -> None:
        if code:
            reason: bytes = self._lib.rd_kafka_err2str(code)
            raise ClusterError(f"{what}: {reason.decode()}")

    # -- topics ---------------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int, *, exist_ok: bool = False) -> bool:
        """Create ``topic`` with ``partitions`` partitions; False if it existed and
        ``exist_ok``."""
        if partitions < 1:
            raise ClusterError("--partitions must be at least 1")
        code = self._lib.rd_kafka_mock_topic_create(self._cluster(), topic.encode(), partitions, 1)
        if code == TOPIC_ALREADY_EXISTS and exist_ok:
            return False
        self._check(code, f"cannot create topic {topic!r}")
        return True

    def delete_topic(self, topic: str) -> None:
        code = self._lib.rd_kafka_mock_topic_delete(self._cluster(), topic.encode())
        self._check(code, f"cannot delete topic {topic!r}")

    # -- brokers --------------------------------------------------------------------------

    def set_rtt(self, rtt_ms: int, broker: int | None = None) -> None:
        """Delay every answer of ``broker`` (every broker if None) by ``rtt_ms``."""
        for broker_id in self._broker_ids(broker):
            code = self._lib.rd_kafka_mock_broker_set_rtt(self._cluster(), broker_id, rtt_ms)
            self._check(code, f"cannot set broker {broker_id}'s RTT")

    def set_down(self, broker: int) -> None:
        """Take ``broker`` down: it closes its connections and accepts none."""
        self._check(self._lib.rd_kafka_mock_broker_set_down(self._cluster(), broker),
                    f"cannot take broker {broker} down")  # fmt: skip

    def set_up(self, broker: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_up(self._cluster(), broker),
                    f"cannot bring broker {broker} up")  # fmt: skip

    def _broker_ids(self, broker: int | None) -> list[int]:
        if broker is None:
            return list(range(1, self.brokers + 1))
        if not 1 <= broker <= self.brokers:
            raise ClusterError(f"broker {broker}: the mock's brokers are 1..{self.brokers}")
        return [broker]

    # -- groups ---------------------------------------------------------------------------

    def set_rebalance_delay(self, delay_ms: int) -> None:
        """The classic group's initial rebalance delay (group.initial.rebalance.delay.ms)."""
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster(), delay_ms)

    def set_consumer_session(self, session_ms: int | None, heartbeat_ms: int | None) -> None:
        """KIP-848's broker-side group.consumer.session.timeout.ms and heartbeat interval."""
        if session_ms is not None:
            self._lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(
                self._cluster(), session_ms
            )
        if heartbeat_ms is not None:
            self._lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(
                self._cluster(), heartbeat_ms
            )

    def refuse(self, api_key: int, *errors: int) -> None:
        """Answer the next ``len(errors)`` requests of ``api_key`` with these error codes."""
        codes = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(
            self._cluster(), api_key, len(errors), codes
        )
