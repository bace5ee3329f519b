"""`lagless lag` (placeholder until its issue lands)."""

from __future__ import annotations

from lagless.errors import LaglessError


def lag() -> None:
    """Not built yet."""
    raise LaglessError("'lagless lag' is not built yet")
