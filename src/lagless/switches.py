"""``LAGLESS_*`` on/off switches: ``1`` (the default) or ``0``, anything else one clear error.
The standard library only: Spark's Python processes read them too."""

from __future__ import annotations

import os
from collections.abc import Mapping

from lagless.errors import ConfigError


def switched_on(name: str, meaning: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``name`` is on (unset or 1) or off (0); ConfigError naming both values and what
    1 does (``meaning``) for any other value."""
    value = (os.environ if environ is None else environ).get(name, "1").strip()
    if value not in {"0", "1"}:
        raise ConfigError(f"{name}={value!r}: use 1 ({meaning}) or 0")
    return value == "1"
