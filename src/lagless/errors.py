"""Errors lagless raises on purpose.

Every error a user can cause (bad input, an unreachable cluster, a dead broker) is a
:class:`LaglessError` whose message fits on one line; the CLI prints it without a traceback.
Errors about one record carry its coordinates, after confluent-kafka's ``KafkaError``.
"""

from __future__ import annotations

from dataclasses import dataclass


class LaglessError(Exception):
    """A failure with a one-line, user-facing explanation."""


class ConfigError(LaglessError):
    """Settings or arguments that cannot work."""


class BrokerError(LaglessError):
    """The embedded broker could not be started, reached or stopped."""


class ClusterError(LaglessError):
    """The Kafka cluster did not answer or refused a request."""


@dataclass(frozen=True)
class RecordCoordinates:
    """Where a record lives: enough to find it again."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


class RecordError(LaglessError):
    """A failure about one record; carries the record's coordinates."""

    def __init__(self, message: str, coordinates: RecordCoordinates) -> None:
        super().__init__(f"{message} ({coordinates})")
        self.reason = message
        self.coordinates = coordinates
