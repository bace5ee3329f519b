"""How much of the machine a lab scenario used, and how much was left (Linux ``/proc``).

Over the measurement span (warm-up end → last cool-down end), :class:`CpuMeter` reports:

* ``host_busy_cores``: the whole host's busy CPU (every process, the lab's and everyone
  else's: /proc/stat), in cores (1.0 = one core busy the whole span);
* ``lab_cores``: the lab's own processes — this process (load, samplers) and every instance it
  ran (/proc/PID/stat, read every tick; an instance's last reading stands for it once it has
  exited, so up to a tick of its CPU may be missing);
* ``headroom_cores``: cores - host_busy_cores.

Elsewhere than Linux it reports nothing (None), never a made-up figure.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lagless.lab.instances import Instance

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def host_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of the host since boot; None without /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    values = [int(v) for v in first[1:9]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (None if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


class CpuMeter:
    def __init__(self) -> None:
        self._last: dict[int, float] = {}  # pid -> its last CPU reading
        self._at_begin: dict[int, float] = {}
        self._begin: tuple[float, float, tuple[int, int] | None] | None = None  # wall, own, host
        self._end: tuple[float, float, tuple[int, int] | None] | None = None
        self._end_cpu: dict[int, float] = {}

    def sample(self, instances: list[Instance]) -> None:
        for instance in instances:
            if instance.proc is None:
                continue
            cpu = process_cpu_s(instance.proc.pid)
            if cpu is not None:
                self._last[instance.proc.pid] = cpu

    def begin(self) -> None:
        self._at_begin = dict(self._last)
        self._begin = (time.monotonic(), own_cpu_s(), host_jiffies())

    def end(self) -> None:
        self._end = (time.monotonic(), own_cpu_s(), host_jiffies())
        self._end_cpu = dict(self._last)

    def to_json(self) -> dict[str, Any] | None:
        if self._begin is None or self._end is None:
            return None
        (wall0, own0, host0), (wall1, own1, host1) = self._begin, self._end
        span = wall1 - wall0
        if span <= 0 or host0 is None or host1 is None:
            return None
        cores = os.cpu_count() or 1
        busy = (host1[0] - host0[0]) / max(1, host1[1] - host0[1]) * cores
        instances = sum(cpu - self._at_begin.get(pid, 0.0) for pid, cpu in self._end_cpu.items())
        return {
            "cores": cores,
            "span_s": round(span, 1),
            "host_busy_cores": round(busy, 2),
            "lab_cores": round((instances + own1 - own0) / span, 2),
            "headroom_cores": round(cores - busy, 2),
        }
