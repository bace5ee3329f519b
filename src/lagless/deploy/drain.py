"""How long a stopping App may take: what ``terminationGracePeriodSeconds`` must cover.

On SIGTERM (:mod:`lagless.signals`) every handler's engine drains at once, in parallel:

1. in-flight records finish, up to the engine's ``shutdown_budget_s``;
2. the last commit, sent again after a rebalance that refused it, up to the engine's own
   rejoin bound (:func:`lagless.engine.offsets.carry.rejoin_bound_s`: session timeout +
   heartbeat interval);
3. with a DLQ, the dead letters flushed at close (twice, each up to
   :data:`lagless.engine.results.dlq.FLUSH_S`);

then the runner closes the output producers one after the other, each flush up to
:data:`lagless.app.outputs.CLOSE_S` (a handler declared with ``output=``). The bound is the
slowest engine plus every output flush, plus :data:`EXIT_MARGIN_S` for the process to exit. No
number here is lagless's own: each comes from the App's settings or the engine's constants, so a
longer shutdown budget renders a longer grace period.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lagless.app.handlers import HandlerSpec
from lagless.app.outputs import CLOSE_S
from lagless.engine import EngineConfig
from lagless.engine.offsets import carry
from lagless.engine.results.dlq import FLUSH_S

EXIT_MARGIN_S = 5.0  # after the drain: the HTTP server and the interpreter stop


@dataclass(frozen=True)
class Drain:
    """The parts of the longest drain, in seconds (the slowest handler's engine parts)."""

    handler: str
    shutdown_budget_s: float
    last_commit_s: float
    dead_letters_s: float
    outputs_s: float

    @property
    def total_s(self) -> float:
        engine = self.shutdown_budget_s + self.last_commit_s + self.dead_letters_s
        return engine + self.outputs_s + EXIT_MARGIN_S

    @property
    def grace_period_s(self) -> int:
        """Whole seconds, rounded up: the least ``terminationGracePeriodSeconds``."""
        return math.ceil(self.total_s)

    def describe(self) -> str:
        """One line: how the grace period is made up."""
        return (
            f"{self.grace_period_s} s = shutdown budget {self.shutdown_budget_s:g} + last commit "
            f"{self.last_commit_s:g} + dead letters {self.dead_letters_s:g} + outputs "
            f"{self.outputs_s:g} + exit {EXIT_MARGIN_S:g} (handler {self.handler})"
        )


def engine_drain_s(config: EngineConfig) -> tuple[float, float, float]:
    """One engine's shutdown budget, last-commit bound and dead-letter flush bound."""
    dead_letters = 2 * FLUSH_S if config.dlq_topic is not None else 0.0
    return config.shutdown_budget_s, carry.rejoin_bound_s(config), dead_letters


def drain(specs: Sequence[HandlerSpec], configs: Sequence[EngineConfig]) -> Drain:
    """The drain of an App's handlers (``App.specs`` and ``App.engine_configs()``)."""
    parts = {spec.name: engine_drain_s(c) for spec, c in zip(specs, configs, strict=True)}
    slowest = max(parts, key=lambda name: sum(parts[name]))
    outputs = CLOSE_S * sum(1 for spec in specs if spec.target.topic is not None)
    return Drain(slowest, *parts[slowest], outputs)
