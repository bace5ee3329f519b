"""Fetching reads in a child process, for a long-lived reader that must outlive a crash of
librdkafka (:attr:`lagless.kafka.compat.Deviations.fetch_survives_delete`).

On the embedded Tansu 0.6, a consumer that is fetching a topic while the topic is deleted dies
with a segmentation fault in librdkafka's main thread (measured with confluent-kafka 2.16.1:
4 of 4 deletions during a fetch; a fresh consumer per read, older protocol versions or closing
the consumer once the topic is gone do not avoid it, as the fetch in flight is enough). The
console's sampler fetches every partition's end each cycle, so any deletion can fall in one.

Two readers share one child process handler (:class:`Child`): a crash there fails that read
with a :class:`~lagless.errors.ClusterError` naming it, the next read starts a new child, and
the caller lives on.

- :class:`IsolatedReads`: partition ends and head timestamps, its clients kept open in the
  child across reads (the console's sampler, every cycle).
- :class:`IsolatedCalls`: any module-level function whose arguments and result pickle (the
  console's pages: a topic's latest records, the dead letters), one call at a time.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from lagless.errors import ClusterError, LaglessError
from lagless.kafka.offsets import PartitionKey

log = logging.getLogger(__name__)

START_S = 60.0  # a child's import of lagless and confluent_kafka, on a loaded machine
R = TypeVar("R")


def _serve_reads(conn: Connection, conf: Mapping[str, Any], group: str) -> None:
    """The child of :class:`IsolatedReads`: answers ``("ends", keys, timeout)`` and
    ``("heads", positions, timeout)``."""
    from lagless.kafka.offsets import OffsetProbe
    from lagless.observe.lag import LagReader

    probe = OffsetProbe(conf)
    heads = LagReader(conf, group)

    def answer(request: tuple[str, Any, float]) -> Any:
        op, arg, timeout = request
        if op == "ends":
            return probe.end_offsets(arg, timeout)
        return heads.head_timestamps(arg, timeout)

    try:
        _serve(conn, answer)
    finally:
        probe.close()
        heads.close()


def _serve_calls(conn: Connection) -> None:
    """The child of :class:`IsolatedCalls`: answers ``(function, args)``."""
    _serve(conn, lambda request: request[0](*request[1]))


def _serve(conn: Connection, answer: Callable[[Any], Any]) -> None:
    """Send ``("ready", None)``, then answer each request: ``("ok", value)``, or
    ``("error", line)`` for a LaglessError; return once the parent has gone (its end of the
    pipe closed: it stopped, or it died). Ctrl-C reaches the whole process group: the parent
    handles it and closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        conn.send(("ready", None))
        while True:
            request = conn.recv()
            try:
                reply = ("ok", answer(request))
            except LaglessError as exc:
                reply = ("error", str(exc))
            conn.send(reply)
    except (EOFError, OSError):
        return


class Child:
    """One spawned child process serving requests over a pipe (``target(conn, *args)`` sends
    ``("ready", None)`` first, then one ``(status, value)`` per request); started on first
    use, started again after it died or hung. ``what`` names it in errors and logs."""

    def __init__(self, what: str, target: Callable[..., None], *args: Any) -> None:
        self.what = what
        self._target, self._args = target, args
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()  # one request at a time
        self.restarts = 0

    def ask(self, request: Any, timeout: float, doing: str) -> Any:
        """Send ``request``; its answer within ``timeout`` s, or ClusterError (the child is
        then replaced)."""
        with self._lock:
            conn = self._running()
            conn.send(request)
            return self._answer(timeout, doing)

    def _running(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.is_alive():
            return self._conn
        self._drop()
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=self._target, args=(child, *self._args), name=self.what, daemon=True
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self._answer(START_S, "start")
        return parent

    def _answer(self, timeout: float, doing: str) -> Any:
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
        log.warning("the %s process %s during %s; a new one starts", self.what, how, doing)
        raise ClusterError(f"the {self.what} process {how} during {doing} (a topic deleted "
                           "while it was fetching?)")  # fmt: skip

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5.0)
        self._proc = self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()


class IsolatedReads:
    """Partition ends and head timestamps read by a child process (started on first use,
    started again after it died)."""

    def __init__(self, conf: Mapping[str, Any], group: str) -> None:
        self._child = Child("offset probe", _serve_reads, dict(conf), group)

    @property
    def restarts(self) -> int:
        return self._child.restarts

    def end_offsets(self, keys: list[PartitionKey], timeout: float) -> dict[PartitionKey, int]:
        if not keys:
            return {}
        return dict(self._child.ask(("ends", keys, timeout), timeout + 10.0, "ends"))

    def head_timestamps(
        self, positions: Mapping[PartitionKey, int], timeout: float
    ) -> dict[PartitionKey, int | None]:
        if not positions:
            return {}
        return dict(self._child.ask(("heads", dict(positions), timeout), timeout + 10.0, "heads"))

    def close(self) -> None:
        self._child.close()


def isolated_reads(conf: Mapping[str, Any], group: str) -> IsolatedReads | None:
    """For a long-lived lag reader of ``group``: :class:`IsolatedReads` where a topic deleted
    during a fetch crashes the client (:attr:`~lagless.kafka.compat.Deviations.
    fetch_survives_delete`), else None (fetch in this process)."""
    from lagless.kafka.clients import make_admin
    from lagless.kafka.compat import deviations_of

    if deviations_of(make_admin(conf)).fetch_survives_delete:
        return None
    return IsolatedReads(conf, group)


class IsolatedCalls:
    """Calls of module-level functions (arguments and result picklable) in a child process,
    one at a time, each given ``timeout`` seconds; a crash or a hang raises ClusterError and
    the next call starts a new child."""

    def __init__(self, what: str, timeout: float) -> None:
        self._child = Child(what, _serve_calls)
        self.timeout = timeout

    @property
    def restarts(self) -> int:
        return self._child.restarts

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        result: R = self._child.ask((fn, args), self.timeout, getattr(fn, "__name__", "a call"))
        return result

    def close(self) -> None:
        self._child.close()
