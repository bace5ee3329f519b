"""The console's sampler: what one cycle costs for many groups, beside the same reads done the
way ``lagless group describe`` does them (group by group).

Prints one JSON object. Usage: python bench/ui.py [--groups 50,500] [--partitions 4]
[--wide-groups 500] [--wide-partitions 20] [--cycles 5]

Per size, N groups each commit offsets on every partition of one topic, half way to its end (so
every partition lags and its lag in seconds is read). Then:

* ``sampler``: :class:`lagless.ui.sampler.Sampler` cycles (the first one, which reads every head
  timestamp and start offset, reported apart as ``first_cycle_s``); ``cycle_s`` is the median
  of the next ``--cycles``, ``cpu_s`` this process's CPU time per cycle and ``cpu_share`` that
  over the default 1 s interval;
Each size runs on a fresh embedded broker (or on ``LAGLESS_BOOTSTRAP``, where the groups of
earlier sizes stay). ``describe`` is measured on ``--describe-max`` groups and scaled to all.

* ``describe``: for every group, what ``lagless group describe G`` reads (DescribeGroups, the
  group's offsets, ends, starts and head timestamps; one client set per group, in process: no
  command start-up counted).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _broker import bench_cluster
from lagless.kafka.admin import alter_committed_offsets, create_topic
from lagless.kafka.groups import describe_group
from lagless.observe.lag import LagReader
from lagless.ui.cluster import ClusterReads
from lagless.ui.sampler import Sampler

RECORDS_PER_PARTITION = 20


def setup(conf: dict[str, Any], groups: int, partitions: int) -> tuple[str, list[str]]:
    topic = f"bench-ui-{uuid.uuid4().hex[:8]}"
    create_topic(conf, topic, partitions)
    producer = Producer(conf)
    for p in range(partitions):
        for i in range(RECORDS_PER_PARTITION):
            producer.produce(topic, b"%d" % i, partition=p)
    producer.flush(30)
    names = [f"bench-ui-{uuid.uuid4().hex[:6]}-{i}" for i in range(groups)]
    half = {(topic, p): RECORDS_PER_PARTITION // 2 for p in range(partitions)}
    for name in names:
        alter_committed_offsets(conf, name, half)
    return topic, names


def sampler_cost(conf: dict[str, Any], cycles: int, groups: set[str]) -> dict[str, Any]:
    reads = ClusterReads(conf)
    sampler = Sampler(reads)
    try:
        began = time.monotonic()
        first = sampler.cycle()
        first_s = time.monotonic() - began
        seen = {g.group for g in first.groups} & groups
        walls, cpus = [], []
        for _ in range(cycles):
            cpu, wall = time.process_time(), time.monotonic()
            snap = sampler.cycle()
            walls.append(time.monotonic() - wall)
            cpus.append(time.process_time() - cpu)
            assert snap.up, snap.error
        lagging = sum(1 for g in snap.groups if g.group in groups and g.lag > 0)
    finally:
        reads.close()
    cpu_s = statistics.median(cpus)
    return {
        "first_cycle_s": round(first_s, 3),
        "cycle_s": round(statistics.median(walls), 3),
        "cycle_max_s": round(max(walls), 3),
        "cpu_s": round(cpu_s, 3),
        "cpu_share": round(cpu_s / 1.0, 3),
        "groups_seen": len(seen),
        "groups_lagging": lagging,
    }


def describe_cost(conf: dict[str, Any], names: list[str]) -> dict[str, Any]:
    began = time.monotonic()
    cpu = time.process_time()
    for name in names:
        info = describe_group(conf, name)
        assigned = {t for m in info.members for t, _ in m.partitions}
        with LagReader(conf, name) as reader:
            reader.check()
            reader.measure(assigned)
    return {"all_groups_s": round(time.monotonic() - began, 3),
            "cpu_s": round(time.process_time() - cpu, 3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", default="50,500")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--wide-groups", type=int, default=500)
    parser.add_argument("--wide-partitions", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument(
        "--describe-max", type=int, default=20, help="describe this many groups, scale to all"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    sizes = [(int(n), args.partitions) for n in args.groups.split(",")]
    sizes.append((args.wide_groups, args.wide_partitions))
    out: dict[str, Any] = {"bench": "ui", "cycles": args.cycles, "runs": []}
    for groups, partitions in sizes:
        with bench_cluster() as (bootstrap, embedded):  # a fresh broker per size
            conf = {"bootstrap.servers": bootstrap}
            out["broker"] = "embedded Tansu" if embedded else bootstrap
            _topic, names = setup(conf, groups, partitions)
            run: dict[str, Any] = {"groups": groups, "partitions_per_group": partitions}
            run["sampler"] = sampler_cost(conf, args.cycles, set(names))
            sample = names[: args.describe_max]
            cost = describe_cost(conf, sample)
            scale = groups / len(sample)
            run["describe"] = {**cost, "groups_described": len(sample),
                               "all_groups_s": round(cost["all_groups_s"] * scale, 3)}  # fmt: skip
            run["describe_over_sampler"] = round(
                run["describe"]["all_groups_s"] / max(run["sampler"]["cycle_s"], 1e-9), 1
            )
            out["runs"].append(run)
            print(json.dumps(run), file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
