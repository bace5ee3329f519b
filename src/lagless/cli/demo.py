"""`lagless demo`: the whole system on the embedded broker, end to end."""

from __future__ import annotations

import time
from collections import Counter
from typing import Annotated

import typer

from lagless.cli.common import kafka_conf, out_console
from lagless.kafka.admin import create_topic
from lagless.kafka.offsets import topic_ranges
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.produce.producer import run_load
from lagless.produce.workloads import ID_HEADER, MALFORMED_HEADER, Workload, WorkloadSpec, generate


def demo(
    ctx: typer.Context,
    jobs: Annotated[int, typer.Option(min=1, help="jobs to produce")] = 600,
    events: Annotated[int, typer.Option(min=1, help="events to produce")] = 5000,
) -> None:
    """Run the demo: broker, topics, load, read back."""
    conf = kafka_conf(ctx)
    out_console.rule("lagless demo")
    out_console.print(f"cluster: {conf['bootstrap.servers']}")
    suffix = time.strftime("%Y%m%d-%H%M%S")
    jobs_topic, events_topic = f"demo-jobs-{suffix}", f"demo-events-{suffix}"
    for name in (jobs_topic, events_topic):
        create_topic(conf, name, partitions=6, exist_ok=True)
    jobs_spec = WorkloadSpec(Workload.JOBS, keys=32, sleep_ms=(10, 30), seed=1, id_prefix="job-")
    jobs_result = run_load(conf, jobs_topic, generate(jobs_spec), count=jobs)
    ev_spec = WorkloadSpec(Workload.EVENTS, bad_fraction=0.02, seed=2, id_prefix="ord-")
    ev_result = run_load(conf, events_topic, generate(ev_spec), count=events)
    for name, result in ((jobs_topic, jobs_result), (events_topic, ev_result)):
        out_console.print(
            f"produced {result.produced} records to {name} ({result.failed} failed, "
            f"{result.records_per_s:.0f} records/s)"
        )
    for name in (jobs_topic, events_topic):
        ids: Counter[bytes] = Counter()
        malformed = 0
        for msg in read_all(conf, name):
            ids[header(msg, ID_HEADER) or b""] += 1
            malformed += header(msg, MALFORMED_HEADER) is not None
        ends = sum(r.end for r in topic_ranges(conf, name))
        dupes = sum(1 for n in ids.values() if n > 1)
        out_console.print(
            f"read back {sum(ids.values())} records from {name} ({len(ids)} distinct ids, "
            f"{dupes} duplicated, {malformed} malformed; end offsets sum to {ends})"
        )
    out_console.rule("done")
