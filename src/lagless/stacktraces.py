"""A failing handler's traceback, where a developer needs it: in the log (the first failure of
each kind in full at the default verbosity, every one with ``-v``) and in the dead letter's
``lagless-dlq-stacktrace`` header (as Kafka Connect's ``__connect.errors.stacktrace``),
bounded so a deep recursion cannot make the dead letter too large.

A kind is the exception's class and the place it was raised (file and line of the last
frame): the same bug failing for ten thousand records is logged in full once.
"""

from __future__ import annotations

import logging
import threading
import traceback

log = logging.getLogger("lagless.handler")

MAX_STACKTRACE_CHARS = 8 * 1024


def stacktrace(exc: BaseException, limit: int = MAX_STACKTRACE_CHARS) -> str:
    """``exc``'s traceback as text, its last ``limit`` characters (the frames nearest the
    error) when longer, marked as cut."""
    text = "".join(traceback.format_exception(exc)).rstrip("\n")
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"... ({cut} characters cut)\n{text[-limit:]}"


_seen: set[tuple[str, str, int | None]] = set()
_seen_lock = threading.Lock()


def kind(exc: BaseException) -> tuple[str, str, int | None]:
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1] if frames else None
    return (type(exc).__name__, where.filename if where else "?", where.lineno if where else None)


def log_failure(exc: BaseException, attempts: int, text: str) -> None:
    """Log a record's final failure: in full (WARNING) the first time its kind is seen, else
    in full at INFO (shown with ``-v``)."""
    with _seen_lock:
        first = kind(exc) not in _seen
        _seen.add(kind(exc))
    level = logging.WARNING if first else logging.INFO
    note = " (the first of its kind: later ones are logged with -v)" if first else ""
    log.log(level, "a record failed after %d attempts%s:\n%s", attempts, note, text)
