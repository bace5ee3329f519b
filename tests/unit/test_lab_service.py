"""A lab service reports its slow starts: an instance that took long to join the group waited
for the cluster (a loaded machine) and is named in the scenario's notes, not failed."""

from __future__ import annotations

import json
from pathlib import Path

from lagless.lab.instances import Instance
from lagless.lab.model import EVENTS_FILE
from lagless.lab.scenarios import SCENARIOS
from lagless.lab.service import SLOW_START_S, Service, ServiceSpec


def started(directory: Path, name: str, at: float, joined_after: float | None) -> Instance:
    slot, gen = (int(part[1:]) for part in name.split("-"))
    instance = Instance(slot, gen, directory / name)
    instance.directory.mkdir(parents=True)
    instance.started_at = at
    lines = []
    if joined_after is not None:
        lines.append({"ts": at + joined_after, "instance": name, "kind": "subscribed"})
    (instance.directory / EVENTS_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return instance


def test_instances_slow_to_join_are_counted_with_how_long_they_took(tmp_path: Path) -> None:
    spec = ServiceSpec("service-1", "t", "g", 4, 2, 1.0, rolled=True)
    service = Service(spec, {}, "127.0.0.1:1", SCENARIOS["kip848"], 0.25, tmp_path)
    service.instances = [
        started(tmp_path, "s0-g0", 100.0, 1.2),  # a normal start
        started(tmp_path, "s1-g1", 200.0, SLOW_START_S + 7.5),  # waited for the cluster
        started(tmp_path, "s2-g1", 250.0, SLOW_START_S + 1.25),
        started(tmp_path, "s0-g1", 300.0, None),  # never joined: its failure says so, not this
    ]
    assert service.slow_starts() == [
        f"service-1: 2 of 3 instances took more than {SLOW_START_S:.0f} s from their start to "
        f"joining the group ({SLOW_START_S + 1.25:.1f}-{SLOW_START_S + 7.5:.1f} s; a slow "
        "start, waited for)"
    ]
    service.instances = service.instances[:1]
    assert service.slow_starts() == []  # nothing said when every start was quick
