"""Kafka's rule for topic names, in one place (the standard library only: Spark's Python
processes import it from a shipped zip)."""

from __future__ import annotations

import re

TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic(name: str) -> str:
    """``name`` if Kafka accepts it as a topic name (1-249 of ``a-zA-Z0-9._-``)."""
    if not TOPIC_NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"{name!r} is not a topic name (1-249 characters of a-z A-Z 0-9 . _ -)")
    return name
