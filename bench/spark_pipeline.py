"""The Spark pipeline, Kafka -> Parquet, beside the same events from JSON files.

The pipeline runs the demo's events (``lagless.spark.examples.events``).

Prints one JSON object. Usage:
    python bench/spark_pipeline.py [--events N] [--partitions P] [--no-aggregates]
        [--max-offsets-per-trigger M] [--master local[*]] [--repeat R] [--warmup-rounds W]

Both runs go through ``run_pipeline`` in one SparkSession with the same transformation, the
same outputs (Parquet by event date and batch, DLQ through the lagless-kafka sink, windowed
aggregates unless ``--no-aggregates``, all from the one query's micro-batches) and the same
trigger (available-now). Only the raw rows differ: the ``lagless-kafka`` source on a topic, or
Spark's text source on JSON-lines files holding the same values (shaped into Kafka's columns).
A warm-up of both paths (100k events) runs first so neither pays for JVM/Python-worker
start-up, then ``--warmup-rounds`` pairs of both sides on the measured events, not counted: the
JVM's JIT compiler goes on compiling the pipeline's code through the first million-event runs.

Then ``--repeat`` pairs (default 5), each a Kafka run and a files run back to back (the side
that goes first alternates from pair to pair), so the two runs of a pair see the same machine
load. ``ratio`` = the median over the pairs of (Kafka records/s / files records/s)
(target >= 0.8 at 1M events); every pair's ratio is listed (``ratio_each``), and so is every
run's rate (``*_records_per_s_each``). For comparison with the figures of earlier versions
(each side's best run): ``ratio_best`` = best Kafka records/s / best files records/s.
``kafka`` and ``files`` describe each side's median run (by records/s; of an even count, the
lower middle one). ``seconds`` runs from the start of the query to its end; records/s =
input records / seconds.

``source_ms_per_trigger`` = Spark's ``durationMs.latestOffset + durationMs.getBatch`` of each
trigger; ``steady_source_ms_*``: the same for the triggers of a processing-time query that a
producer feeds (target <= 50 ms for every trigger after the first, which also pays Spark's
one-off start of the source). ``load_average_1m``: the machine's 1-minute load average before
and after (both sides share the cores with everything else running).

Where a side's time goes: ``outside_triggers_s`` = ``seconds`` minus Spark's
``durationMs.triggerExecution`` of its triggers: setting the run up, Spark starting the query
(for the Kafka side also the Python process that runs the source's driver side) and stopping
it. ``cpu_s`` = CPU seconds (user + system, from ``/proc``; Linux only, else absent) used during
the run by the JVM (``jvm``: Spark's driver and executor threads, JIT and GC), by the Python
processes Spark started (``python``: the workers reading Kafka, the source's runner, forked by
lagless's fork server for local masters), by the embedded broker (``broker``; absent with
``LAGLESS_BOOTSTRAP``) and by this process (``driver``: the benchmark's Python side of Spark's
driver, ``foreachBatch`` included); ``cpu_us_per_record`` = the same per input record, in µs.
Every run's ``cpu_s`` is listed in ``*_cpu_s_each``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from _broker import bench_cluster
from lagless.kafka.admin import create_topic
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate
from lagless.spark.connector.session import build_session
from lagless.spark.examples.events import events_config
from lagless.spark.pipeline import PipelineSummary, run_pipeline
from lagless.spark.pipeline.progress import BatchReport

RATIO_TARGET = 0.8  # Kafka records/s over files records/s, at 1M events
SOURCE_MS_TARGET = 50  # latestOffset + getBatch of one trigger of the Kafka source


def process_cpu_s() -> dict[str, float] | None:
    """CPU seconds used so far by this process's JVM child, the JVM's Python descendants (the
    dead ones included, as their parents' reaped time), the embedded broker and this process;
    None off Linux."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    # pid -> (parent, own utime+stime, reaped children's cutime+cstime)
    stats: dict[int, tuple[int, float, float]] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks = [int(f) for f in fields[11:15]]
            stats[int(entry.name)] = (int(fields[1]), sum(ticks[:2]) / tick, sum(ticks[2:]) / tick)
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    mine = children.get(os.getpid(), [])
    jvms = [p for p in mine if b"java" in _cmdline(p)]
    # The source runners lagless forks for Spark (lagless.spark.connector.prefork): the server's
    # children, not the server itself (its imports are done once per session).
    servers = [p for p in mine if b"lagless.spark.connector.prefork" in _cmdline(p)]
    brokers = [p for p in mine if b"tansu" in _cmdline(p)]  # the embedded broker
    # The JVM's own threads; its children are the Python processes (ended ones: reaped time).
    out = {
        "jvm": sum(stats[p][1] for p in jvms),
        "python": sum(stats[p][2] for p in jvms + servers),
        "driver": sum(os.times()[:2]),
    }
    if brokers:
        out["broker"] = sum(stats[p][1] for p in brokers)
    stack = [c for p in jvms + servers for c in children.get(p, [])]
    while stack:
        pid = stack.pop()
        out["python"] += stats[pid][1] + stats[pid][2]
        stack.extend(children.get(pid, []))
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def make_events(n: int, seed: int) -> list[OutRecord]:
    spec = WorkloadSpec(Workload.EVENTS, bad_fraction=0.01, seed=seed, id_prefix=f"b{seed}-")
    out: list[OutRecord] = []
    for record in generate(spec):
        if len(out) == n:
            break
        out.append(record)
    return out


def write_files(records: list[OutRecord], directory: Path, files: int) -> None:
    directory.mkdir(parents=True)
    handles = [(directory / f"part-{i}.json").open("wb") for i in range(files)]
    for i, record in enumerate(records):
        handles[i % files].write(record.value + b"\n")
    for handle in handles:
        handle.close()


def files_stream(directory: Path, topic: str) -> Callable[[SparkSession], DataFrame]:
    """Spark's text source, shaped like Kafka rows for the same transformation."""

    def raw(spark: SparkSession) -> DataFrame:
        return spark.readStream.text(str(directory)).select(
            F.lit(None).cast("binary").alias("key"),
            F.col("value").cast("binary").alias("value"),
            F.lit(topic).alias("topic"),
            F.lit(0).alias("partition"),
            F.lit(-1).cast("long").alias("offset"),
            F.current_timestamp().alias("timestamp"),
            F.lit(0).alias("timestampType"),
        )

    return raw


def run(
    spark: SparkSession,
    conf: dict[str, Any],
    topic: str,
    work: Path,
    args: argparse.Namespace,
    files: Path | None,
    label: str = "0",
) -> Run:
    name = f"{'files' if files is not None else 'kafka'}-{label}"
    config = events_config(
        topic=topic,
        output=work / f"{name}-out",
        checkpoint=work / f"{name}-ck",
        kafka=conf,
        master=args.master,
        aggregates=args.aggregates,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        dlq_topic=f"{topic}-{name}-dlq",
    )
    raw = files_stream(files, topic) if files is not None else None
    before = process_cpu_s()
    summary = run_pipeline(config, spark=spark, raw=raw)
    after = process_cpu_s()
    cpu = None if before is None or after is None else {k: after[k] - before[k] for k in after}
    return Run(summary, cpu)


@dataclass(frozen=True)
class Run:
    summary: PipelineSummary
    cpu_s: dict[str, float] | None  # process_cpu_s used during the run

    @property
    def records_per_s(self) -> float:
        return self.summary.records_per_s


def steady_triggers(
    spark: SparkSession, conf: dict[str, Any], work: Path, partitions: int, triggers: int
) -> list[int]:
    """``source_ms`` of each trigger of a running query (processing-time=1s) over a topic a
    producer feeds (2,000 events per trigger): what a long-running pipeline pays per trigger,
    where every ``latestOffset`` asks the broker (unlike available-now batches after the
    first, which reuse the target fixed at start)."""
    topic = f"bench-steady-{uuid.uuid4().hex[:8]}"
    create_topic(conf, topic, partitions)
    config = events_config(
        topic=topic,
        output=work / "steady-out",
        checkpoint=work / "steady-ck",
        kafka=conf,
        trigger="processing-time=1s",
        dlq_topic=f"{topic}-dlq",
    )
    stop = threading.Event()
    done: list[PipelineSummary] = []
    batches: list[BatchReport] = []
    runner = threading.Thread(
        target=lambda: done.append(
            run_pipeline(config, spark=spark, stop=stop, on_batch=batches.append)
        )
    )
    runner.start()
    try:
        for i in range(triggers * 4):
            records = make_events(2000, seed=100 + i)
            run_load(conf, topic, iter(records), count=len(records))
            if len(batches) >= triggers:
                break
            time.sleep(1.0)
    finally:
        stop.set()
        runner.join()
    return list(done[0].source_ms)


def prepare(
    conf: dict[str, Any], work: Path, n: int, partitions: int, seed: int
) -> tuple[str, Path, float]:
    topic = f"bench-events-{uuid.uuid4().hex[:8]}"
    create_topic(conf, topic, partitions)
    records = make_events(n, seed)
    produced = run_load(conf, topic, iter(records), count=n)
    if produced.produced != n:
        raise SystemExit(f"only {produced.produced} of {n} records were produced")
    files = work / f"files-{topic}"
    write_files(records, files, partitions)
    return topic, files, produced.records_per_s


def side(run_: Run) -> dict[str, Any]:
    summary = run_.summary
    overhead = summary.source_ms
    out: dict[str, Any] = {
        "seconds": round(summary.seconds, 2),
        "records_per_s": round(summary.records_per_s, 1),
        "batches": summary.batches,
        "valid_rows": summary.valid_rows,
        "dlq_rows": summary.dlq_rows,
        "source_ms_per_trigger_max": max(overhead, default=0),
        "source_ms_per_trigger": list(overhead),
        "outside_triggers_s": round(summary.seconds - sum(summary.trigger_ms) / 1000, 2),
    }
    if run_.cpu_s:
        out["cpu_s"] = {k: round(v, 2) for k, v in run_.cpu_s.items()}
        records = max(summary.input_rows, 1)
        out["cpu_us_per_record"] = {k: round(v * 1e6 / records, 2) for k, v in run_.cpu_s.items()}
    return out


def median_run(runs: list[Run]) -> Run:
    """The run of median records/s (of an even count, the lower middle one)."""
    ranked = sorted(runs, key=lambda r: r.records_per_s)
    return ranked[(len(ranked) - 1) // 2]


def pair(
    spark: SparkSession,
    conf: dict[str, Any],
    topic: str,
    work: Path,
    args: argparse.Namespace,
    files: Path,
    label: str,
    kafka_first: bool,
) -> tuple[Run, Run]:
    """One Kafka run and one files run back to back (Kafka's first if ``kafka_first``)."""
    if kafka_first:
        kafka = run(spark, conf, topic, work, args, None, label)
        return kafka, run(spark, conf, topic, work, args, files, label)
    from_files = run(spark, conf, topic, work, args, files, label)
    return run(spark, conf, topic, work, args, None, label), from_files


def ratios(pairs: list[tuple[Run, Run]]) -> list[float]:
    return [k.records_per_s / f.records_per_s for k, f in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--no-aggregates", dest="aggregates", action="store_false")
    parser.add_argument("--warmup", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5, help="measured pairs (Kafka, files)")
    parser.add_argument("--warmup-rounds", type=int, default=1, help="pairs, not counted")
    parser.add_argument("--triggers", type=int, default=8, help="of the steady-state run")
    args = parser.parse_args()
    if args.repeat < 1 or args.warmup_rounds < 0:
        parser.error("--repeat must be at least 1, --warmup-rounds at least 0")

    started = time.monotonic()
    load_before = os.getloadavg()[0]
    with (
        bench_cluster() as (bootstrap, embedded),
        tempfile.TemporaryDirectory(prefix="lagless-spark-bench-") as tmp,
    ):
        work = Path(tmp)
        conf = {"bootstrap.servers": bootstrap}
        spark = build_session(args.master, app_name="lagless-bench", log_level="ERROR")
        try:
            if args.warmup:
                w_topic, w_files, _ = prepare(conf, work / "warmup", args.warmup, 2, seed=1)
                run(spark, conf, w_topic, work / "warmup", args, None)
                run(spark, conf, w_topic, work / "warmup", args, w_files)
            topic, files, produce_rate = prepare(conf, work, args.events, args.partitions, 2)
            warmup = [
                pair(spark, conf, topic, work, args, files, f"w{i}", i % 2 == 0)
                for i in range(args.warmup_rounds)
            ]
            # The side that runs first alternates, so neither always follows the other's GC
            pairs = [
                pair(spark, conf, topic, work, args, files, str(i), i % 2 == 0)
                for i in range(args.repeat)
            ]
            steady = steady_triggers(spark, conf, work, args.partitions, args.triggers)
        finally:
            spark.stop()
    kafka_runs = [k for k, _ in pairs]
    files_runs = [f for _, f in pairs]
    ratio = statistics.median(ratios(pairs))
    best = max(r.records_per_s for r in kafka_runs) / max(r.records_per_s for r in files_runs)
    result = {
        "benchmark": "spark_pipeline",
        "events": args.events,
        "partitions": args.partitions,
        "master": args.master,
        "cores": os.cpu_count(),
        "aggregates": args.aggregates,
        "max_offsets_per_trigger": args.max_offsets_per_trigger,
        "embedded_broker": embedded,
        "produce_records_per_s": produce_rate,
        "repeat": args.repeat,
        "warmup_rounds": args.warmup_rounds,
        "kafka": side(median_run(kafka_runs)),
        "files": side(median_run(files_runs)),
        "kafka_records_per_s_each": [round(r.records_per_s, 1) for r in kafka_runs],
        "files_records_per_s_each": [round(r.records_per_s, 1) for r in files_runs],
        "kafka_cpu_s_each": [side(r).get("cpu_s") for r in kafka_runs],
        "files_cpu_s_each": [side(r).get("cpu_s") for r in files_runs],
        "ratio_each": [round(x, 3) for x in ratios(pairs)],
        "warmup_ratio_each": [round(x, 3) for x in ratios(warmup)],
        "ratio": round(ratio, 3),
        "ratio_best": round(best, 3),
        "pairs_at_target": sum(x >= RATIO_TARGET for x in ratios(pairs)),
        "ratio_target": RATIO_TARGET,
        "steady_source_ms_per_trigger": steady,
        "steady_source_ms_max_after_first": max(steady[1:], default=None),
        "source_ms_target": SOURCE_MS_TARGET,
        "targets_met": {
            "ratio": ratio >= RATIO_TARGET,
            "source_ms_after_first": max(steady[1:], default=SOURCE_MS_TARGET + 1)
            <= SOURCE_MS_TARGET,
        },
        "same_valid_rows": len({r.summary.valid_rows for r in kafka_runs + files_runs}) == 1,
        "total_seconds": round(time.monotonic() - started, 1),
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
