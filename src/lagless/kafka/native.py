"""What lagless's C modules share: the librdkafka to load, client options as strings, and
librdkafka's log lines handed to logging.

Both C modules (:mod:`lagless.spark.connector.native_fetch`'s range reader and
:mod:`lagless.kafka.fetcher`'s record fetcher) call librdkafka's C API in the library
confluent-kafka loaded, looked up by path, so one librdkafka serves every client.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lagless.kafka.clients import LIBRDKAFKA_LOGGER

# librdkafka's syslog levels -> logging's
_LEVELS = {
    **dict.fromkeys((0, 1, 2), logging.CRITICAL),
    3: logging.ERROR,
    4: logging.WARNING,
    **dict.fromkeys((5, 6), logging.INFO),
    7: logging.DEBUG,
}


_said: set[tuple[str, str]] = set()


def say_fallback(logger: logging.Logger, fallback: str, why: str) -> None:
    """Log once per process (per logger and reason) that a C path is not used: ``fallback``
    says what is done instead."""
    if (logger.name, why) not in _said:
        _said.add((logger.name, why))
        logger.warning("%s (slower): %s", fallback, why)


def librdkafka_path() -> str | None:
    """The librdkafka confluent-kafka loaded (so every client shares one library)."""
    import confluent_kafka  # noqa: F401  (loads librdkafka)

    maps = Path("/proc/self/maps")
    if not maps.is_file():
        return None
    for line in maps.read_text().splitlines():
        fields = line.split(maxsplit=5)  # address, perms, offset, device, inode, path
        if len(fields) == 6 and Path(fields[5]).name.startswith("librdkafka"):
            return fields[5]
    return None


def load(mod: Any) -> str | None:
    """Point the C module ``mod`` at confluent-kafka's librdkafka: None, or why it cannot be."""
    path = librdkafka_path()
    if path is None:
        return "librdkafka's path is not known (no /proc/self/maps)"
    try:
        mod.load(path)
    except ImportError as exc:
        return str(exc)
    return None


def loaded(name: str, what: str) -> tuple[Any, str | None]:
    """The C module ``name`` pointed at confluent-kafka's librdkafka, or None and why not
    (``what`` names the module in that reason)."""
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:
        return None, f"{what} is not built ({exc})"
    why = load(mod)
    return (None, why) if why is not None else (mod, None)


def conf_pairs(conf: Mapping[str, Any]) -> list[tuple[str, str]] | str:
    """librdkafka properties as strings, or why they cannot be (a callback or object value,
    which only confluent-kafka can hand to librdkafka)."""
    pairs = []
    for name, value in conf.items():
        if isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        elif isinstance(value, str | int | float):
            pairs.append((name, str(value)))
        else:
            return f"option {name!r} is a {type(value).__name__}, not a string"
    return pairs


def forward_logs(mod: Any) -> None:
    """librdkafka's log lines since the last call, to ``lagless.librdkafka`` (as
    confluent-kafka's clients made by :mod:`lagless.kafka.clients` do)."""
    lines, dropped = mod.take_logs()
    for level, facility, text in lines:
        LIBRDKAFKA_LOGGER.log(_LEVELS.get(level, logging.INFO), "%s: %s", facility, text)
    if dropped:
        LIBRDKAFKA_LOGGER.warning("%d librdkafka log lines were dropped", dropped)
