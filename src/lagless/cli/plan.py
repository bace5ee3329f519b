"""`lagless plan` (placeholder until its issue lands)."""

from __future__ import annotations

from lagless.errors import LaglessError


def plan() -> None:
    """Not built yet."""
    raise LaglessError("'lagless plan' is not built yet")
