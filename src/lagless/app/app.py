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
import copy
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from lagless.app.handlers import Codecs, HandlerSpec
from lagless.app.outputs import check_outputs_exist
from lagless.app.runner import Runner
from lagless.app.signals import stop_on_signals
from lagless.config import KafkaSettings, load_settings
from lagless.connect import resolve
from lagless.engine import EngineConfig, RunSummary
from lagless.errors import ConfigError
from lagless.kafka.admin import check_reachable

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


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
        **options: Any,
    ) -> None:
        if not group:
            raise ConfigError("App(group=...): a consumer group id is needed")
        self.group = group
        self._settings = settings
        self._bootstrap = bootstrap
        self._config_file = config_file
        self._state_dir = state_dir
        self._defaults = {k: v for k, v in options.items() if v is not None}
        self._overrides: dict[str, Any] = {}
        self.specs: list[HandlerSpec] = []
        self._runner: Runner | None = None
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
        topics = (topic,) if isinstance(topic, str) else tuple(topic)
        codecs = Codecs(value, key, output_value, output_key)

        def register(func: F) -> F:
            merged = {**self._defaults, **options}
            conf = dict(output_conf or {})
            spec = HandlerSpec.make(func, topics, codecs, output, merged, conf)
            if any(s.name == spec.name for s in self.specs):
                raise ConfigError(f"two handlers named {spec.name!r}: rename one")
            spec.engine_config(self.group)  # validate now: a bad option fails at import
            self.specs.append(spec)
            return func

        return register

    def configured(self, settings: KafkaSettings | None = None, **overrides: Any) -> App:
        """A copy connecting with ``settings`` (if given) and with engine options overridden
        for every handler (``None`` values are ignored); ConfigError if one is invalid."""
        other = copy.copy(self)
        other.specs = list(self.specs)
        other._runner = None
        other.summaries = {}
        other.hurried = False
        if settings is not None:
            other._settings = settings
        other._overrides = {
            **self._overrides, **{k: v for k, v in overrides.items() if v is not None}
        }  # fmt: skip
        other.engine_configs()
        return other

    def engine_configs(self) -> list[EngineConfig]:
        """Each handler's validated engine options, in registration order."""
        if not self.specs:
            raise ConfigError("the app has no handlers: decorate a function with @app.handler")
        configs = [spec.engine_config(self.group, **self._overrides) for spec in self.specs]
        return _distinct_instances(configs, [spec.name for spec in self.specs])

    def settings(self) -> KafkaSettings:
        """The connection: explicit settings, else flags/env/TOML; the embedded broker if none."""
        base = self._settings or load_settings(self._config_file, bootstrap=self._bootstrap)
        resolved = resolve(base, self._state_dir)
        if resolved.fallback_note is not None:
            log.warning("%s", resolved.fallback_note)  # never a silent fallback
        return resolved.settings

    # -- running --------------------------------------------------------------------------

    def _start(self, metrics_port: int | None) -> Runner:
        if self._runner is not None:
            raise ConfigError("the app is already running")
        if metrics_port is not None and not 0 < metrics_port < 65536:
            raise ConfigError(f"metrics port {metrics_port} is not a port (1-65535)")
        configs = self.engine_configs()
        conf = self.settings().to_librdkafka()
        check_reachable(conf)
        check_outputs_exist(conf, (s.output for s in self.specs if s.output is not None))
        runner = Runner(conf, self.specs, configs, metrics_port=metrics_port)
        runner.start()
        self._runner = runner
        return runner

    def _finish(self, runner: Runner) -> dict[str, RunSummary]:
        try:
            self.summaries = runner.finish()
        finally:
            self.hurried = runner.hurried
            self._runner = None
        return self.summaries

    def run(self, metrics_port: int | None = None) -> dict[str, RunSummary]:
        """Run every handler until each one's stop condition or SIGTERM/SIGINT; each handler's
        summary by name. Raises the first handler failure (after stopping the others)."""
        runner = self._start(metrics_port)
        event = runner.stop_event
        with stop_on_signals(event.is_set, event.set, runner.hurry):
            try:
                runner.join()
            finally:
                summaries = self._finish(runner)
        return summaries

    async def run_async(self, metrics_port: int | None = None) -> dict[str, RunSummary]:
        """:meth:`run` inside a running event loop, which stays free: the engines run on their
        own threads (coroutine handlers on each engine's event loop). Cancelling the task
        stops the app (drain, commit, leave) and re-raises."""
        runner = await asyncio.to_thread(self._start, metrics_port)
        try:
            while runner.running:
                await asyncio.sleep(0.05)
        finally:
            runner.stop_event.set()
            summaries = await asyncio.to_thread(self._finish, runner)
        return summaries

    def stop(self) -> None:
        """Ask a running app to stop (drain, commit, leave); :meth:`run` then returns."""
        if self._runner is not None:
            self._runner.stop_event.set()

    # -- for tests and embedding ----------------------------------------------------------

    def __enter__(self) -> App:
        """Start in the background; leaving the block stops, waits and raises any failure."""
        self._start(None)
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
        self, metrics_port: int | None = None, ready_timeout: float = 60.0
    ) -> Iterator[App]:
        """Start in the background and wait until every handler holds partitions."""
        runner = self._start(metrics_port)
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
