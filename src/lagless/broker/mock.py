"""librdkafka's mock cluster in a process of its own: a second test target beside Tansu.

librdkafka builds an in-process mock cluster for any client configured with
``test.mock.num.brokers``; it implements the group protocols faithfully (KIP-848
``group.protocol=consumer``, cooperative rebalances, static membership, commit metadata) where the
embedded Tansu broker does not. :class:`MockCluster` starts ``python -m lagless.broker.mock``, which
creates one, prints its bootstrap and holds it until its stdin closes; any process then connects
to that bootstrap like to a real cluster. It has no admin API: topics are created on first use with
:data:`AUTO_PARTITIONS` partitions.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import TracebackType

from lagless.errors import ClusterError

AUTO_PARTITIONS = 4  # partitions of an auto-created topic on the mock cluster
MOCK_CLUSTER_ID_PREFIX = "mockCluster"


class MockCluster:
    """A librdkafka mock cluster held by a child process (``with MockCluster() as bootstrap``)."""

    def __init__(self, brokers: int = 1, timeout: float = 20.0) -> None:
        self.brokers = brokers
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def start(self) -> str:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "lagless.broker.mock", str(self.brokers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        line = self._proc.stdout.readline().strip()
        if not line or time.monotonic() > deadline:
            err = self._proc.stderr.read() if self._proc.stderr else ""
            self.stop()
            raise ClusterError(f"the mock cluster did not start: {err.strip()[:200]}")
        self.bootstrap = line
        return line

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def hold(brokers: int) -> None:
    """Create a mock cluster, print its bootstrap, keep it until stdin closes."""
    from confluent_kafka import Producer

    producer = Producer({"test.mock.num.brokers": brokers, "bootstrap.servers": ""})
    meta = producer.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in meta.brokers.values())
    sys.stdout.write(bootstrap + "\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    producer.flush(1)


if __name__ == "__main__":
    hold(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
