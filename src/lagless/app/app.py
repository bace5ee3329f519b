"""``lagless.App``: consumer services on the engine, written as decorated functions.

::

    app = lagless.App(group="enricher")

    @app.handler("orders", ordering="key", max_in_flight=500, dlq="orders-dlq",
                 value=Order, output="orders-enriched")
    async def enrich(order: Order, record: lagless.Record) -> Enriched | None: ...

    app.run()   # blocks; SIGTERM/SIGINT drain, commit, leave

Each handler runs as its own engine (its own consumer in the app's group, its own options:
every :class:`~lagless.engine.EngineConfig` keyword, ``dlq`` for ``dlq_topic``). Options given
to ``App(...)`` apply to every handler; a handler's own options win; :meth:`App.configured`
(what ``lagless run`` uses) overrides both. See docs/app.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from lagless.app import environment
from lagless.app.environment import AppEnvironment
from lagless.app.handlers import BATCH_OPTIONS, Codecs, HandlerSpec, layered
from lagless.app.health import LOCALHOST
from lagless.app.outputs import check_outputs_exist
from lagless.app.runner import Runner
from lagless.config import KafkaSettings, load_settings
from lagless.connect import resolve
from lagless.engine import EngineConfig, Progress, RunSummary
from lagless.errors import ConfigError
from lagless.kafka.admin import check_reachable
from lagless.observe.instance import StatusBoard
from lagless.observe.metrics import Metrics
from lagless.signals import stop_on_signals, unclaimed_signals

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


OnStart = Callable[[Mapping[str, Metrics], Mapping[str, StatusBoard]], object]
"""Told each handler's metrics and status board once every engine started."""
_CLI_IMPORT: list[str] = []  # the module ``lagless run`` is importing, while it does


@contextmanager
def imported_by_cli(module: str) -> Iterator[None]:
    """While ``lagless run`` imports ``module``: starting an app there is refused (an unguarded
    ``app.run()`` would block the import, then the app would run a second time)."""
    _CLI_IMPORT.append(module)
    try:
        yield
    finally:
        _CLI_IMPORT.remove(module)


class App:
    """A group of handlers run together; see the module doc."""

    def __init__(
        self,
        group: str,
        *,
        settings: KafkaSettings | None = None,
        bootstrap: str | None = None,
        config_file: Path | None = None,
        state_dir: Path | None = None,
        metrics_port: int | None = None,
        metrics_host: str | None = None,
        **options: Any,
    ) -> None:
        if not group:
            raise ConfigError("App(group=...): a consumer group id is needed")
        if settings is not None and (bootstrap is not None or config_file is not None):
            raise ConfigError(
                "App(...): give settings= or bootstrap=/config_file=, not both (settings "
                "would win and the others be ignored)"
            )
        _check_app_options(options)
        self.group = group
        self._settings = settings
        self._bootstrap = bootstrap
        self._config_file = config_file
        self._state_dir = state_dir
        self.metrics_port = metrics_port  # run()'s, then LAGLESS_METRICS_PORT's, win over these
        self.metrics_host = metrics_host
        self._defaults = {k: v for k, v in options.items() if v is not None}
        self._overrides: dict[str, Any] = {}
        self.specs: list[HandlerSpec] = []
        self._runner: Runner | None = None
        self._claim = threading.Lock()
        self._busy = False  # started (or starting) and not finished
        self._stop_asked = False  # stop() while starting: applied once the runner exists
        self.summaries: dict[str, RunSummary] = {}
        self.hurried = False  # the last run was stopped at once (a second signal)

    # -- registering ----------------------------------------------------------------------

    def handler(
        self,
        topic: str | Sequence[str],
        *,
        value: Any = bytes,
        key: Any = bytes,
        output: str | None = None,
        output_value: Any = None,
        output_key: Any = None,
        output_conf: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Callable[[F], F]:
        """Register the decorated function for ``topic`` (see the module doc; with
        ``batch_size`` it is a batch handler, :mod:`lagless.app.batch`). ``output_value`` /
        ``output_key``: how outputs are encoded (default: :func:`~lagless.app.codecs.encode`);
        ``output_conf``: librdkafka properties of its output producer (e.g. ``linger.ms``)."""
        if "topics" in options:
            raise ConfigError(
                "@app.handler(..., topics=...): the topic (or a list of them) is its first "
                'argument: @app.handler(["a", "b"], ...)'
            )
        topics = _topics(topic)
        codecs = Codecs(value, key, output_value, output_key)

        def register(func: F) -> F:
            merged = layered(self._defaults, options)
            if output_conf is not None and not isinstance(output_conf, Mapping):
                name = getattr(func, "__name__", type(func).__name__)
                raise ConfigError(
                    f"handler {name}: output_conf={output_conf!r}: give a dict of librdkafka "
                    'properties, e.g. {"linger.ms": 5}'
                )
            conf = dict(output_conf or {})
            spec = HandlerSpec.make(func, topics, codecs, output, merged, conf)
            if any(s.name == spec.name for s in self.specs):
                raise ConfigError(f"two handlers named {spec.name!r}: rename one")
            specs = [*self.specs, spec]
            # validate now: a bad option, or a topic two handlers would split, fails at import
            _one_consumer_per_topic([s.engine_config(self.group) for s in specs], specs)
            self.specs.append(spec)
            return func

        return register

    def configured(self, settings: KafkaSettings | None = None, **overrides: Any) -> App:
        """A copy connecting with ``settings`` (if given) and with engine options overridden
        for every handler (``None`` values are ignored); ConfigError if one is invalid."""
        other = copy.copy(self)
        other.specs = list(self.specs)
        other._runner = None
        other._claim = threading.Lock()
        other._busy = False
        other._stop_asked = False
        other.summaries = {}
        other.hurried = False
        if settings is not None:
            other._settings = settings
        other._overrides = {
            **self._overrides, **{k: v for k, v in overrides.items() if v is not None}
        }  # fmt: skip
        other.engine_configs()
        return other

    def engine_configs(self, env: AppEnvironment | None = None) -> list[EngineConfig]:
        """Each handler's validated engine options, in registration order; ``env``'s static
        id (``LAGLESS_STATIC_ID``) over the handlers' own, under :meth:`configured`'s."""
        if not self.specs:
            raise ConfigError("the app has no handlers: decorate a function with @app.handler")
        overrides = self._overrides
        if env is not None and env.static_id is not None:
            overrides = {"static_id": env.static_id, **overrides}
        per_record = overrides
        if any(spec.batch for spec in self.specs):  # batch options are the batch handlers'
            per_record = {k: v for k, v in overrides.items() if k not in BATCH_OPTIONS}
        configs = [
            spec.engine_config(self.group, **(overrides if spec.batch else per_record))
            for spec in self.specs
        ]
        _one_consumer_per_topic(configs, self.specs)
        return _distinct_instances(configs, [spec.name for spec in self.specs])

    def settings(self) -> KafkaSettings:
        """The connection: explicit settings, else flags/env/TOML; the embedded broker if none."""
        base = self._settings or load_settings(self._config_file, bootstrap=self._bootstrap)
        resolved = resolve(base, self._state_dir)
        if resolved.fallback_note is not None:
            log.warning("%s", resolved.fallback_note)  # never a silent fallback
        return resolved.settings

    # -- running --------------------------------------------------------------------------

    def metrics_address(
        self, metrics_port: int | None = None, metrics_host: str | None = None
    ) -> tuple[str, int | None]:
        """Where a run serves /metrics: the arguments, else ``LAGLESS_METRICS_PORT`` /
        ``LAGLESS_METRICS_HOST``, else ``App(metrics_port=..., metrics_host=...)``; loopback by
        default (:mod:`lagless.app.environment`)."""
        env = environment.read()
        port = _first(metrics_port, env.metrics_port, self.metrics_port)
        host = _first(metrics_host, env.metrics_host, self.metrics_host) or LOCALHOST
        return host, port

    def _start(
        self,
        metrics_port: int | None,
        metrics_host: str | None,
        on_progress: Any = None,
        on_start: OnStart | None = None,
    ) -> Runner:
        with self._claim:  # one run at a time, claimed before the (slow) start
            if self._busy:
                raise ConfigError("the app is already running")
            self._busy = True
            self._stop_asked = False
        try:
            host, port = self.metrics_address(metrics_port, metrics_host)
            runner = self._launch(port, host, environment.read(), on_progress)
            if on_start is not None:  # e.g. lagless run --record: sample each handler's metrics
                on_start(runner.metrics, runner.boards)
        except BaseException:
            self._busy = False
            raise
        with self._claim:
            self._runner = runner
            if self._stop_asked:  # stop() came while it started: not lost
                runner.stop_event.set()
        return runner

    def _launch(
        self, metrics_port: int | None, metrics_host: str, env: AppEnvironment, on_progress: Any
    ) -> Runner:
        if _CLI_IMPORT:
            raise ConfigError(
                f"app.run() was called while lagless run imported {_CLI_IMPORT[-1]!r}: guard "
                'it with `if __name__ == "__main__":` (lagless run starts the app itself)'
            )
        if metrics_port is not None and not (
            type(metrics_port) is int and 0 < metrics_port < 65536
        ):  # a str from the environment, a float, True: a TypeError or a bind elsewhere
            raise ConfigError(f"metrics port {metrics_port!r} is not a port (1-65535)")
        if metrics_port is None and metrics_host != LOCALHOST:
            raise ConfigError(
                f"metrics_host={metrics_host!r} serves nothing without metrics_port=PORT"
            )
        configs = self.engine_configs(env)
        conf = self.settings().to_librdkafka()
        check_reachable(conf)
        check_outputs_exist(conf, (s.output for s in self.specs if s.output is not None))
        runner = Runner(
            conf, self.specs, configs, (metrics_host, metrics_port), on_progress=on_progress
        )
        runner.start()
        return runner

    def _finish(self, runner: Runner) -> dict[str, RunSummary]:
        try:
            self.summaries = runner.finish()
        finally:
            self.hurried = runner.hurried
            self._runner = None
            self._busy = False
        return self.summaries

    def run(
        self,
        metrics_port: int | None = None,
        metrics_host: str | None = None,
        on_progress: Callable[[str, Progress], None] | None = None,
        on_start: OnStart | None = None,
    ) -> dict[str, RunSummary]:
        """Run every handler until each one's stop condition or SIGTERM/SIGINT; each handler's
        summary by name. Raises the first handler failure (after stopping the others).
        ``metrics_port``: serve /metrics, /healthz, /readyz and /status (each handler's owned
        partitions, a list: what ``lagless ui --scrape`` reads) on ``metrics_host`` (loopback
        by default; ``0.0.0.0`` for a Kubernetes probe, which calls the pod's address). Not
        given, ``LAGLESS_METRICS_PORT`` / ``LAGLESS_METRICS_HOST`` then ``App(metrics_port=...,
        metrics_host=...)`` apply (:meth:`metrics_address`).
        ``on_progress(handler, progress)``: each engine's progress, about twice a second;
        ``on_start(metrics, boards)``: each handler's metrics and status board
        (:class:`lagless.observe.instance.StatusBoard`), once the engines are started."""
        runner = self._start(metrics_port, metrics_host, on_progress, on_start)
        event = runner.stop_event
        with stop_on_signals(event.is_set, event.set, runner.hurry):
            try:
                runner.join()
            finally:
                summaries = self._finish(runner)
        return summaries

    async def run_async(
        self, metrics_port: int | None = None, metrics_host: str | None = None
    ) -> dict[str, RunSummary]:
        """:meth:`run` inside a running event loop, which stays free: the engines run on their
        own threads (coroutine handlers on each engine's event loop). Cancelling the task
        stops the app (drain, commit, leave) and re-raises. SIGTERM and SIGINT stop it as
        in :meth:`run` unless the process has its own handler for them (``asyncio.run``'s
        SIGINT cancels the task)."""
        starting = asyncio.ensure_future(asyncio.to_thread(self._start, metrics_port, metrics_host))
        try:
            runner = await asyncio.shield(starting)
        except asyncio.CancelledError:  # the start goes on in its thread: stop what it starts
            with contextlib.suppress(Exception):
                started = await starting
                started.stop_event.set()
                await asyncio.to_thread(self._finish, started)
            raise
        event = runner.stop_event
        try:
            with stop_on_signals(event.is_set, event.set, runner.hurry, unclaimed_signals()):
                while runner.running:
                    await asyncio.sleep(0.05)
        finally:
            runner.stop_event.set()
            summaries = await asyncio.to_thread(self._finish, runner)
        return summaries

    def stop(self) -> None:
        """Ask a running (or starting) app to stop (drain, commit, leave); :meth:`run` then
        returns. No effect on an app that is not running."""
        with self._claim:
            self._stop_asked = self._busy
            runner = self._runner
        if runner is not None:
            runner.stop_event.set()

    # -- for tests and embedding ----------------------------------------------------------

    def __enter__(self) -> App:
        """Start in the background; leaving the block stops, waits and raises any failure."""
        self._start(None, None)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            self._finish(self._runner)

    @contextmanager
    def running(
        self,
        metrics_port: int | None = None,
        ready_timeout: float = 60.0,
        metrics_host: str | None = None,
    ) -> Iterator[App]:
        """Start in the background and wait until every handler holds partitions."""
        runner = self._start(metrics_port, metrics_host)
        try:
            if not runner.wait_ready(ready_timeout):
                runner.stop_event.set()
                raise ConfigError(
                    f"the app was not ready within {ready_timeout} s (no partitions assigned)"
                )
            yield self
        finally:
            self._finish(runner)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every handler's stop condition (e.g. ``until_idle_s``); True if all ended."""
        return self._runner.join(timeout) if self._runner is not None else True

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Wait until every handler holds partitions; False on timeout."""
        return self._runner.wait_ready(timeout) if self._runner is not None else False

    @property
    def health(self) -> dict[str, Any]:
        """Alive, ready and each handler's last report (what /healthz and /readyz serve)."""
        if self._runner is None:
            return {"alive": False, "ready": False, "handlers": {}}
        return self._runner.health().to_json()


def _first(*values: Any) -> Any:
    """The first value that is not None (None if all are)."""
    return next((v for v in values if v is not None), None)


def _topics(topic: object) -> tuple[str, ...]:
    """``@app.handler``'s topic or topics; ConfigError for anything else."""
    if callable(topic):  # @app.handler without its arguments
        raise ConfigError(
            '@app.handler needs its topic: @app.handler("orders", ...), not @app.handler'
        )
    topics: tuple[object, ...] = (
        (topic,) if isinstance(topic, str) else tuple(topic) if isinstance(topic, Iterable) else ()
    )
    if not topics or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"@app.handler({topic!r}): give a topic name or a list of them")
    return tuple(str(t) for t in topics)


HANDLER_ONLY = ("value", "key", "output", "output_value", "output_key", "output_conf")


def _check_app_options(options: Mapping[str, Any]) -> None:
    """ConfigError for an ``App(...)`` option the engine does not take (validated here, not
    blamed on the first handler registered): codecs and outputs go to ``@app.handler``."""
    known = set(EngineConfig.model_fields) - {"topics"} | {"dlq"}
    for name in options:
        if name in known:
            continue
        where = (
            f"; {name}= goes to @app.handler" if name in HANDLER_ONLY
            else "; topics go to @app.handler" if name == "topics"
            else ""
        )  # fmt: skip
        raise ConfigError(f"App({name}=...): not an engine option{where}")


def _one_consumer_per_topic(configs: list[EngineConfig], specs: list[HandlerSpec]) -> None:
    """ConfigError if two handlers consume one topic in one group: as two members of the group
    they would split its partitions, each seeing only part of its records."""
    first: dict[tuple[str, str], str] = {}
    for config, spec in zip(configs, specs, strict=True):
        for topic in config.topics:
            other = first.setdefault((config.group, topic), spec.name)
            if other != spec.name:
                raise ConfigError(
                    f"handlers {other} and {spec.name} both consume {topic!r} in group "
                    f"{config.group!r}: they would split its partitions, each seeing part of "
                    "its records; give one its own group=... (or make them one handler)"
                )


def _distinct_instances(configs: list[EngineConfig], names: list[str]) -> list[EngineConfig]:
    """A static id (group.instance.id) shared by several handlers gets the handler's name as a
    suffix: two members with one instance id would fence each other."""
    ids = [c.static_id for c in configs]
    return [
        c.model_copy(update={"static_id": f"{c.static_id}-{name}"})
        if c.static_id is not None and ids.count(c.static_id) > 1
        else c
        for c, name in zip(configs, names, strict=True)
    ]
