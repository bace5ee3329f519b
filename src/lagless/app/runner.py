"""One run of an app: an engine per handler, each on its own thread, sharing one stop event.

:class:`Runner` starts every engine, lets the caller wait (blocking or from a coroutine),
stops them all when one fails or a stop is asked, then flushes the output producers and
returns each handler's :class:`~lagless.engine.RunSummary` (or raises the first failure).
Each handler's :class:`~lagless.observe.instance.StatusBoard` (:attr:`Runner.boards`) follows
its engine's status: the metrics server answers ``/status`` with them (a list, one per handler)
and ``lagless run`` publishes them in the state directory, both for ``lagless ui``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

from confluent_kafka import KafkaError, KafkaException

from lagless.app.batch import async_batch_engine_handler, batch_engine_handler
from lagless.app.handlers import HandlerSpec, async_engine_handler, engine_handler
from lagless.app.health import LOCALHOST, AppHealth, serve
from lagless.app.outputs import OutputProducer
from lagless.engine import Engine, EngineConfig, Progress, RunSummary
from lagless.errors import ConfigError, LaglessError
from lagless.observe.instance import StatusBoard, metrics_url
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)

# after a second signal, how long an engine may take to stop before the app leaves it behind
# (its poll thread held by a handler call that hangs: see lagless.engine.workers.inline)
HURRY_GRACE_S = 5.0


def output_producer(conf: Mapping[str, Any], spec: HandlerSpec) -> OutputProducer:
    """``spec``'s output producer; ConfigError naming the handler for a bad ``output_conf``."""
    try:
        return OutputProducer(conf, spec.output_conf)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        reason = err.str() if isinstance(err, KafkaError) else str(err)
        raise ConfigError(f"handler {spec.name}: output_conf: {reason}") from None


def status_board(name: str, config: EngineConfig, url: str | None) -> StatusBoard:
    """Handler ``name``'s board; its instance is the client id, else host-pid-handler."""
    client = config.client_id or f"{socket.gethostname()}-{os.getpid()}-{name}"
    return StatusBoard(config.group, client, url, topics=config.topics, handler=name)


class Runner:
    """Engines for ``specs`` on ``conf``; :meth:`start`, :meth:`join`, :meth:`finish`."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        specs: Sequence[HandlerSpec],
        configs: Sequence[EngineConfig],
        metrics: tuple[str, int | None] = (LOCALHOST, None),
        on_progress: Callable[[str, Progress], None] | None = None,
    ) -> None:
        self._conf = dict(conf)
        self._specs = list(specs)
        self._configs = list(configs)
        self._metrics_host, self._metrics_port = metrics
        self.stop_event = threading.Event()
        self._engines: dict[str, Engine] = {}
        self.boards: dict[str, StatusBoard] = {}  # each handler's status (what lagless ui shows)
        self._running: dict[str, bool] = {s.name: False for s in specs}
        self.metrics = {s.name: Metrics(group=c.group) for s, c in zip(specs, configs, strict=True)}
        self.summaries: dict[str, RunSummary] = {}
        self._errors: list[BaseException] = []
        self._failing = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._producers: list[OutputProducer] = []
        self._server: WSGIServer | None = None
        self._finished = False
        self._hurried_at: float | None = None
        self._on_progress = on_progress  # told each handler's progress (lagless run's status)

    def start(self) -> None:
        try:
            url = metrics_url(self._metrics_host, self._metrics_port)
            for spec, config in zip(self._specs, self._configs, strict=True):
                producer = output_producer(self._conf, spec)
                self._producers.append(producer)
                engine = Engine(
                    self._conf,
                    config,
                    self._engine_handler(spec, producer),
                    metrics=self.metrics[spec.name],
                    stop=self.stop_event,
                    on_progress=self._progress_of(spec.name),
                )
                self._engines[spec.name] = engine
                board = status_board(spec.name, config, url)
                board.follow(engine.status)
                self.boards[spec.name] = board
                thread = threading.Thread(  # a daemon: one left behind must not hold the exit
                    target=self._run,
                    args=(spec.name, engine),
                    name=f"lagless-app-{spec.name}",
                    daemon=True,
                )
                self._threads.append(thread)
            if self._metrics_port is not None:
                registries = {name: m.exposed() for name, m in self.metrics.items()}
                self._server = serve(
                    self._metrics_host, self._metrics_port, self.health, registries, self.boards
                )
        except BaseException:
            self._close()
            raise
        for thread in self._threads:
            thread.start()

    def _progress_of(self, name: str) -> Callable[[Progress], None] | None:
        observer = self._on_progress
        if observer is None:
            return None
        return lambda progress: observer(name, progress)

    def _engine_handler(self, spec: HandlerSpec, producer: OutputProducer) -> Any:
        """A sync handler, or an ``async def`` one (the engine runs it on its event loop); per
        record, or per batch for a batch handler."""
        if spec.batch:
            if spec.is_async:
                return async_batch_engine_handler(spec, producer)
            return batch_engine_handler(spec, producer)
        if spec.is_async:
            return async_engine_handler(spec, producer)
        return engine_handler(spec, producer)

    def health(self) -> AppHealth:
        """Every handler's engine health (what /healthz and /readyz answer)."""
        return AppHealth(
            {name: engine.health.status() for name, engine in self._engines.items()},
            dict(self._running),
        )

    def _run(self, name: str, engine: Engine) -> None:
        self._running[name] = True
        try:
            self.summaries[name] = engine.run()
        except BaseException as exc:
            with self._failing:
                self._errors.append(exc)
                first = len(self._errors) == 1
            if first:  # raised by finish() (a CLI prints it): logged only in detail
                log.debug("handler %s stopped: %s", name, exc)
            else:
                log.error("handler %s stopped too: %s", name, exc)
            self.stop_event.set()  # one handler failed: stop the others (drain, commit)
        finally:
            self._running[name] = False

    def hurry(self) -> None:
        """Stop every engine at once: no waiting for in-flight records (a second signal).
        An engine still running :data:`HURRY_GRACE_S` later is left behind (see :meth:`join`)."""
        self.stop_event.set()
        if self._hurried_at is None:
            self._hurried_at = time.monotonic()
        for engine in self._engines.values():
            engine.hurry()

    @property
    def hurried(self) -> bool:
        return any(engine.hurried for engine in self._engines.values())

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every engine to end (in short steps: signals get through); True if all did.
        After a second signal, no longer than :data:`HURRY_GRACE_S`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            while thread.is_alive():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return False
                hurried = self._hurried_at
                if hurried is not None and now - hurried >= HURRY_GRACE_S:
                    return False
                thread.join(0.1)
        return True

    def wait_ready(self, timeout: float) -> bool:
        """Wait until every handler holds partitions (see :mod:`lagless.app.health`)."""
        deadline = time.monotonic() + timeout
        while not self.health().ready:
            if time.monotonic() >= deadline or not self.running:
                return False
            time.sleep(0.05)
        return True

    def finish(self) -> dict[str, RunSummary]:
        """Stop, wait, flush and close; each handler's summary, or the first failure."""
        self.stop_event.set()
        self.join()
        for spec, thread in zip(self._specs, self._threads, strict=False):
            if thread.is_alive():  # hurried, and still in a handler call: left behind
                log.error(
                    "handler %s did not stop within %.0f s of the second signal (a handler "
                    "call hangs on its poll thread): left behind, its finished records "
                    "not committed since its last commit",
                    spec.name, HURRY_GRACE_S,
                )  # fmt: skip
                self.summaries[spec.name] = self._engines[spec.name].summary()
        self._close()
        if self._errors:
            raise self._errors[0]
        return {s.name: self.summaries[s.name] for s in self._specs}

    def _close(self) -> None:
        if self._finished:
            return
        self._finished = True
        for producer in self._producers:
            left = producer.close()
            if left:
                self._errors.append(LaglessError(f"{left} output records undelivered at close"))
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
