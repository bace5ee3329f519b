"""`lagless consume` (placeholder until its issue lands)."""

from __future__ import annotations

from lagless.errors import LaglessError


def consume() -> None:
    """Not built yet."""
    raise LaglessError("'lagless consume' is not built yet")
