"""Workloads: the records a load generator publishes.

``jobs``  the work items of the concurrency problem: ``{"id", "sleep_ms", "created_ts"}``.
``events`` order events: ``{"order_id", "user_id", "amount", "currency", "country", "event_ts"}``.

Every record carries a ``lagless-id`` header with its id (also for malformed records, whose
value may not parse), so tests and the dead-letter paths can count records by id. A malformed
record also carries ``lagless-malformed`` naming what is wrong with it (both in :mod:`lagless.ids`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from lagless.errors import ConfigError
from lagless.ids import ID_HEADER, MALFORMED_HEADER, Malformation

CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF")
COUNTRIES = ("DE", "FR", "US", "GB", "JP", "CH", "NL", "ES", "IT", "BR")


class Workload(StrEnum):
    JOBS = "jobs"
    EVENTS = "events"


@dataclass(frozen=True)
class OutRecord:
    """A record to produce."""

    id: str
    value: bytes
    key: bytes | None = None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    malformed: Malformation | None = None


def parse_sleep_range(text: str) -> tuple[int, int]:
    """``"MIN:MAX"`` in milliseconds."""
    low, sep, high = text.partition(":")
    try:
        lo, hi = int(low), int(high if sep else low)
    except ValueError:
        raise ConfigError(f"--sleep-ms {text!r} is not MIN:MAX in milliseconds") from None
    if lo < 0 or hi < lo:
        raise ConfigError(f"--sleep-ms {text!r} needs 0 <= MIN <= MAX")
    return lo, hi


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate. ``keys`` = 0 leaves jobs unkeyed (events are keyed by user)."""

    workload: Workload
    keys: int = 0
    bad_fraction: float = 0.0
    sleep_ms: tuple[int, int] = (1000, 3000)
    seed: int | None = None
    id_prefix: str = ""
    payload_bytes: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.bad_fraction <= 1.0:
            raise ConfigError("--bad-fraction must be between 0 and 1")
        if self.keys < 0:
            raise ConfigError("--keys must be 0 or more")
        if self.payload_bytes < 0:
            raise ConfigError("--payload-bytes must be 0 or more")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _malform(doc: dict[str, object], kind: Malformation, value_field: str) -> bytes:
    if kind is Malformation.BROKEN_JSON:
        text = json.dumps(doc)
        return text[: max(1, len(text) // 2)].encode()
    bad = dict(doc)
    if kind is Malformation.MISSING_FIELD:
        bad.pop(value_field)
    elif kind is Malformation.WRONG_TYPE:
        bad[value_field] = "not-a-number"
    else:
        bad[value_field] = -abs(float(str(bad[value_field]))) - 1.0
    return json.dumps(bad).encode()


def generate(spec: WorkloadSpec, start: int = 0) -> Iterator[OutRecord]:
    """An endless stream of records from id ``start`` on."""
    rng = random.Random(spec.seed)
    jobs = spec.workload is Workload.JOBS
    kinds = list(Malformation) if not jobs else list(Malformation)[:3]
    padding = "x" * spec.payload_bytes
    i = start
    while True:
        rid = f"{spec.id_prefix}{i}"
        doc: dict[str, object]
        if jobs:
            doc = {"id": rid, "sleep_ms": rng.randint(*spec.sleep_ms), "created_ts": _now_ms()}
            key = f"k{i % spec.keys}".encode() if spec.keys else None
            value_field = "sleep_ms"
        else:
            user = rng.randrange(spec.keys or 1000)
            doc = {
                "order_id": rid,
                "user_id": f"u{user}",
                "amount": round(rng.uniform(1, 500), 2),
                "currency": rng.choice(CURRENCIES),
                "country": rng.choice(COUNTRIES),
                "event_ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            }
            key = f"u{user}".encode()
            value_field = "amount"
        if padding:
            doc["payload"] = padding
        headers = [(ID_HEADER, rid.encode())]
        malformed: Malformation | None = None
        if spec.bad_fraction and rng.random() < spec.bad_fraction:
            malformed = rng.choice(kinds)
            value = _malform(doc, malformed, value_field)
            headers.append((MALFORMED_HEADER, malformed.value.encode()))
        else:
            value = json.dumps(doc, separators=(",", ":")).encode()
        yield OutRecord(rid, value, key, headers, malformed)
        i += 1
