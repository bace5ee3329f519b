"""Fetching probes in a child process, for a long-lived reader that must outlive a crash of
librdkafka (:attr:`lagless.kafka.compat.Deviations.fetch_survives_delete`).

On the embedded Tansu 0.6, a consumer that is fetching a topic while the topic is deleted dies
with a segmentation fault in librdkafka's main thread (measured with confluent-kafka 2.16.1:
4 of 4 deletions during a fetch; a fresh consumer per read, older protocol versions or closing
the consumer once the topic is gone do not avoid it, as the fetch in flight is enough). The
console's sampler fetches every partition's end each cycle, so any deletion can fall in one.

:class:`IsolatedReads` runs the fetching reads (partition ends, head timestamps) in a child
process: a crash there fails that read with a :class:`~lagless.errors.ClusterError` naming it,
the next read starts a new child, and the caller (the sampler) lives on.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from lagless.errors import ClusterError, LaglessError
from lagless.kafka.offsets import PartitionKey

log = logging.getLogger(__name__)

START_S = 60.0  # a child's import of lagless and confluent_kafka, on a loaded machine
Request = tuple[str, Any, float]


def _serve(conn: Connection, conf: Mapping[str, Any], group: str) -> None:
    """The child: answers ``("ends", keys, timeout)`` and ``("heads", positions, timeout)``."""
    from lagless.kafka.offsets import OffsetProbe
    from lagless.observe.lag import LagReader

    probe = OffsetProbe(conf)
    heads = LagReader(conf, group)
    conn.send(("ready", None))
    while True:
        try:
            op, arg, timeout = conn.recv()
        except EOFError:
            break
        try:
            if op == "ends":
                conn.send(("ok", probe.end_offsets(arg, timeout)))
            else:
                conn.send(("ok", heads.head_timestamps(arg, timeout)))
        except LaglessError as exc:
            conn.send(("error", str(exc)))
    probe.close()
    heads.close()


class IsolatedReads:
    """Partition ends and head timestamps read by a child process (started on first use,
    started again after it died)."""

    def __init__(self, conf: Mapping[str, Any], group: str) -> None:
        self.conf = dict(conf)
        self.group = group
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self.restarts = 0

    def _child(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.is_alive():
            return self._conn
        self._drop()
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_serve, args=(child, self.conf, self.group), name="lagless-probe", daemon=True
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self._answer(START_S, "start")
        return parent

    def _answer(self, timeout: float, what: str) -> Any:
        conn, proc = self._conn, self._proc
        assert conn is not None and proc is not None
        try:
            if conn.poll(timeout):
                status, value = conn.recv()
                if status == "error":
                    raise ClusterError(str(value))
                return value
        except (EOFError, OSError):
            pass
        proc.join(1.0)
        code = proc.exitcode
        self._drop()
        self.restarts += 1
        how = "did not answer" if code is None else f"died (exit code {code})"
        log.warning("the offset probe process %s during %s; a new one starts", how, what)
        raise ClusterError(f"the offset probe process {how} during {what} (a topic deleted "
                           "while it was fetching?)")  # fmt: skip

    def _ask(self, op: str, arg: Any, timeout: float) -> Any:
        conn = self._child()
        conn.send((op, arg, timeout))
        return self._answer(timeout + 10.0, op)

    def end_offsets(self, keys: list[PartitionKey], timeout: float) -> dict[PartitionKey, int]:
        if not keys:
            return {}
        return dict(self._ask("ends", keys, timeout))

    def head_timestamps(
        self, positions: Mapping[PartitionKey, int], timeout: float
    ) -> dict[PartitionKey, int | None]:
        if not positions:
            return {}
        return dict(self._ask("heads", dict(positions), timeout))

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5.0)
        self._proc = self._conn = None

    def close(self) -> None:
        self._drop()
