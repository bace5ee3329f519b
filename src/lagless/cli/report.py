"""`lagless report` (placeholder until its issue lands)."""

from __future__ import annotations

from lagless.errors import LaglessError


def report() -> None:
    """Not built yet."""
    raise LaglessError("'lagless report' is not built yet")
