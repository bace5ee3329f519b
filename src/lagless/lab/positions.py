"""Position lag as the instances measure it: their ``lagless_position_lag_records`` gauges.

Each ``lagless consume`` instance sets, at every poll, log end - its consumer's position per
partition it owns (Kafka's ``records-lag``) and drops the gauge when the partition leaves it.
:func:`owned_position_lag` reads those gauges from the instances' ``/metrics`` endpoints: per
partition, the value of the instance that reports it (the larger if two do). A partition no
instance reports is owned by nobody; the sampler counts it from its committed offset.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterable

GAUGE = "lagless_position_lag_records"
_LINE = re.compile(rf"^{GAUGE}\{{([^}}]*)\}} (\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse_position_lag(text: str, topic: str) -> dict[int, int]:
    """Per partition of ``topic``, the position lag in a Prometheus text exposition."""
    out: dict[int, int] = {}
    for labels, value in _LINE.findall(text):
        found = dict(_LABEL.findall(labels))
        if found.get("topic") != topic or "partition" not in found:
            continue
        partition = int(found["partition"])
        out[partition] = max(out.get(partition, 0), int(float(value)))
    return out


def scrape(port: int, timeout: float = 0.5) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
            body: bytes = resp.read()
    except (OSError, urllib.error.URLError):
        return None
    return body.decode("utf-8", errors="replace")


def owned_position_lag(ports: Iterable[int], topic: str) -> dict[int, int]:
    """Position lag per partition owned by one of the instances serving on ``ports``."""
    out: dict[int, int] = {}
    for port in ports:
        text = scrape(port)
        if text is None:
            continue
        for partition, lag in parse_position_lag(text, topic).items():
            out[partition] = max(out.get(partition, 0), lag)
    return out
