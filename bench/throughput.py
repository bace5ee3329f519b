"""Records/s of lagless beside a raw and a naive loop: per record, in batches, 1 ms and CPU.

Prints one JSON object. Usage: python bench/throughput.py [--records N] [--slow-records M]
[--partitions P] [--keys K] [--value-bytes B] [--max-in-flight F] [--batch-size S]
[--only noop,sleep,cpu] [--repeat R] [--before SRC]

Topic ``fast``: N jobs records (~150 B values, the ``lagless-id`` header, K keys). Read by
  raw_loop          ``consume(500)``, no per-record work: the ceiling of the client
  naive             one thread: ``consume(500)``, the handler on each record in turn (as a
                    lagless Record), a synchronous commit per poll batch: the design lagless
                    replaces
  engine_<mode>     lagless, per-record handler, each ordering mode
  batch_<mode>      lagless, batch handler (``--batch-size``, default 500), each mode
                    (``inline_batches``: batches whose first call ran on the poll thread,
                    see ``lagless.engine.workers.inline``)
with the ``noop`` handler (group ``noop``). Topic ``slow``: M jobs records of ``sleep_ms`` 1,
read by naive, engine_<mode> and batch_<mode> with the built-in ``sleep`` handler (group
``sleep_1ms``: 1 ms a record; its batch form sleeps the batch's total), and by naive,
``threads`` and ``processes`` (engine, unordered, ``--processes 2``) with a pure-Python
CPU-bound handler of about 1 ms (group ``cpu``; ``cpu_ms`` is its measured time alone).

Every variant runs in its own process, one after another on the same topics, each with its
own consumer group: ``peak_rss_mb`` is that process's peak resident memory (not counting the
worker processes of ``--processes``). The variants' processes tune the garbage collector as
``lagless consume`` does (``lagless.engine.memory.tune_gc``; ``--default-gc`` leaves it).
``seconds`` is the processing span, the first handler start to the last handler end (the raw
loop: first record to last), so joining the group counts for none; ``records_per_s`` =
records / seconds; ``of_raw`` = records_per_s / the raw loop's; ``of_naive`` likewise against
the naive loop of the same group. Every variant runs ``--repeat`` times (default 3), in rounds
of all the variants of a group, and its figures are those of its median run (every run's rate
in ``records_per_s_each``; peak RSS the highest): a 1M-record raw loop lasts under a second,
and single runs of it varied 1.1M-1.7M records/s on an idle machine. The machine's load
average is printed too: on a shared machine only the ratios of one run compare.

``--before SRC``: also run every lagless variant (not the raw and naive loops, which do not
change) on the lagless package found in ``SRC`` (the ``src`` directory of another checkout,
e.g. the code before a change: ``git worktree add /tmp/before main``), in the same rounds right
after the same variant here, so both meet the same load; its figures are under ``before`` (ratios
to this run's raw and naive loops) and each variant's ``of_before`` is its rate over that one.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _handlers
from _broker import bench_cluster
from lagless.engine import EngineConfig, Ordering, Record, load_handler, run_engine
from lagless.engine.memory import tune_gc
from lagless.kafka.admin import create_topic
from lagless.kafka.clients import make_consumer
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate

MODES = [m.value for m in Ordering]
GROUP_TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500}


def workload(n: int, value_bytes: int, keys: int, sleep_ms: int) -> list[OutRecord]:
    """``n`` jobs records padded to about ``value_bytes``."""
    probe_spec = WorkloadSpec(Workload.JOBS, sleep_ms=(sleep_ms, sleep_ms), seed=1, keys=keys)
    probe = next(iter(generate(probe_spec)))
    padding = max(1, value_bytes - len(probe.value))
    spec = WorkloadSpec(
        Workload.JOBS, sleep_ms=(sleep_ms, sleep_ms), seed=1, payload_bytes=padding, keys=keys
    )
    out: list[OutRecord] = []
    for record in generate(spec):
        if len(out) >= n:
            break
        out.append(record)
    return out


# -- the variants (each runs in a child process) ---------------------------------------------


def consumer(conf: Mapping[str, Any], topic: str) -> Any:
    made = make_consumer(
        {
            **conf,
            **GROUP_TIMINGS,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 5,
        }
    )
    made.subscribe([topic])
    return made


def raw_loop(conf: Mapping[str, Any], topic: str, records: int) -> dict[str, Any]:
    reader = consumer(conf, topic)
    seen, first = 0, 0.0
    try:
        while seen < records:
            batch = reader.consume(500, 1.0)
            if batch and not first:
                first = time.perf_counter()
            seen += sum(1 for m in batch if m.error() is None)
        last = time.perf_counter()
    finally:
        reader.close()
    return {"records": seen, "seconds": last - first}


def naive(
    conf: Mapping[str, Any], topic: str, records: int, handler: Callable[[Record], object]
) -> dict[str, Any]:
    reader = consumer(conf, topic)
    seen = 0
    try:
        while seen < records:
            batch = reader.consume(500, 1.0)
            for msg in batch:
                if msg.error() is None and seen < records:
                    handler(Record.from_message(msg))
                    seen += 1
            if batch:
                reader.commit(asynchronous=False)
    finally:
        reader.close()
    return {"records": seen}


def engine(
    conf: Mapping[str, Any], topic: str, records: int, handler: Any, **options: Any
) -> dict[str, Any]:
    config = EngineConfig.build(
        topics=(topic,),
        group=f"bench-{uuid.uuid4().hex[:8]}",
        count=records,
        on_failure="stop",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1500,
        **options,
    )
    summary = run_engine(conf, config, handler)
    return {
        "records": summary.processed,
        "pauses": summary.pauses,
        "commits": summary.commits,
        "max_in_flight_seen": summary.max_in_flight_seen,
        "inline_batches": summary.inline_batches,  # first calls on the poll thread
    }


def handler_of(kind: str, batch: bool) -> Any:
    if kind == "noop":
        return _handlers.noop_batch if batch else _handlers.noop
    if kind == "sleep":
        built_in = load_handler("sleep", batch=batch)
        return _handlers.timed_batch(built_in) if batch else _handlers.timed(built_in)
    return _handlers.cpu


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: since exec, unlike ``ru_maxrss`` of a
    child, which Linux carries over from the parent that forked it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one variant; its figures."""
    conf, topic, records = {"bootstrap.servers": spec["bootstrap"]}, spec["topic"], spec["records"]
    variant, kind = spec["variant"], spec["kind"]
    if variant == "raw_loop":
        return raw_loop(conf, topic, records)
    if variant == "naive":
        out = naive(conf, topic, records, handler_of(kind, batch=False))
    else:
        options: dict[str, Any] = {"max_in_flight": spec["max_in_flight"]}
        if not spec.get("inline", True):
            options["inline"] = False
        if variant.startswith("batch_"):
            options["batch_size"] = spec["batch_size"]
        if variant == "processes":
            options["processes"] = 2
        mode = variant.split("_")[-1] if "_" in variant else "unordered"
        options["ordering"] = mode
        out = engine(conf, topic, records, handler_of(kind, "batch_size" in options), **options)
    if kind == "cpu":  # the handler may run in other processes: its spans are in a file
        calls, seconds, pids = _handlers.read_spans(Path(os.environ[_handlers.SPANS_ENV]))
        return {**out, "records": calls, "seconds": seconds, "handler_processes": pids}
    return {**out, "seconds": _handlers.SPAN.seconds()}


# -- the parent: topics, one child per variant, the JSON -------------------------------------


def run_child(spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Run ``spec`` in a fresh process: its figures and peak RSS."""
    proc = subprocess.Popen(
        [sys.executable, __file__, *spec.pop("flags"), "--child", json.dumps(spec)],
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
        text=True,
    )
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"variant {spec['variant']} ({spec['kind']}) failed: {proc.returncode}")
    figures: dict[str, Any] = json.loads(out)
    seconds = figures["seconds"]
    figures["seconds"] = round(seconds, 3)
    figures["records_per_s"] = round(figures["records"] / seconds, 1) if seconds else 0.0
    return figures


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A variant's figures over its runs: the run of median rate (the lower middle of an even
    count), every run's rate in ``records_per_s_each``, the highest peak RSS of them all."""
    ordered = sorted(runs, key=lambda figures: float(figures["records_per_s"]))
    figures = dict(ordered[(len(ordered) - 1) // 2])
    figures["records_per_s_each"] = [r["records_per_s"] for r in runs]
    figures["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return figures


def ratios(group: dict[str, dict[str, Any]], raw_rate: float) -> None:
    naive_rate = group.get("naive", {}).get("records_per_s", 0.0)
    for figures in group.values():
        rate = figures["records_per_s"]
        figures["of_raw"] = round(rate / raw_rate, 3) if raw_rate else None
        if naive_rate:
            figures["of_naive"] = round(rate / naive_rate, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--slow-records", type=int, default=3000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--value-bytes", type=int, default=150)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--only", default="noop,sleep,cpu")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each variant (its median is kept)"
    )
    parser.add_argument(
        "--default-gc", action="store_true", help="leave the collector as Python sets it"
    )
    parser.add_argument(
        "--before", help="the src directory of a second lagless to run beside this one"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    logging.basicConfig(level=logging.ERROR)
    if args.child:
        if not args.default_gc:
            tune_gc()  # as lagless consume does
        print(json.dumps({**child(json.loads(args.child)), "peak_rss_mb": peak_rss_mb()}))
        return
    groups = args.only.split(",")
    fast = workload(args.records, args.value_bytes, args.keys, 0)
    slow = workload(args.slow_records, args.value_bytes, args.keys, 1)
    mean_bytes = sum(len(r.value) for r in fast) / max(1, len(fast))
    cpu_loops = _handlers.calibrate()
    load_before = os.getloadavg()
    result: dict[str, Any] = {}
    before: dict[str, Any] = {}
    with bench_cluster() as (bootstrap, embedded), tempfile.TemporaryDirectory() as tmp:
        conf = {"bootstrap.servers": bootstrap}
        topics = {"fast": f"fast-{uuid.uuid4().hex[:8]}", "slow": f"slow-{uuid.uuid4().hex[:8]}"}
        for name, records in (("fast", fast), ("slow", slow)):
            create_topic(conf, topics[name], args.partitions)
            produced = run_load(conf, topics[name], records, count=len(records)).produced
            assert produced == len(records), produced
        del fast, slow
        base = {
            "bootstrap": bootstrap,
            "max_in_flight": args.max_in_flight,
            "batch_size": args.batch_size,
        }
        plan = {
            "noop": ("fast", args.records, ["raw_loop", "naive"]
                     + [f"engine_{m}" for m in MODES] + [f"batch_{m}" for m in MODES]),
            "sleep_1ms": ("slow", args.slow_records, ["naive"]
                          + [f"engine_{m}" for m in MODES] + [f"batch_{m}" for m in MODES]),
            "cpu": ("slow", args.slow_records, ["naive", "threads", "processes"]),
        }  # fmt: skip
        for group, (topic, count, listed) in plan.items():
            kind = group.split("_")[0]
            # the raw loop always runs: every ratio is to it
            variants = listed if kind in groups else [v for v in listed if v == "raw_loop"]
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            runs_before: dict[str, list[dict[str, Any]]] = {}
            for turn in range(args.repeat):  # rounds of every variant, so load hits all alike
                for variant in variants:
                    spans = Path(tmp) / f"{group}-{variant}-{turn}.spans"
                    env = {
                        _handlers.CPU_LOOPS_ENV: str(cpu_loops),
                        _handlers.SPANS_ENV: str(spans),
                    }
                    spec = {**base, "topic": topics[topic], "records": count}
                    flags = ["--default-gc"] if args.default_gc else []
                    spec = {**spec, "variant": variant, "kind": kind, "flags": flags}
                    runs[variant].append(run_child(dict(spec), env))
                    if args.before and variant not in ("raw_loop", "naive"):
                        other = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
                        runs_before.setdefault(variant, []).append(run_child(spec, other))
            if variants:
                result[group] = {v: median_run(each) for v, each in runs.items()}
            if runs_before:
                before[group] = {v: median_run(each) for v, each in runs_before.items()}
    raw_rate = result["noop"]["raw_loop"]["records_per_s"]
    for figures in result.values():
        ratios(figures, raw_rate)
    for group, figures in before.items():
        figures["naive"] = result[group]["naive"]  # the same loop: the ratios' reference
        ratios(figures, raw_rate)
        del figures["naive"]
        for variant, old in figures.items():
            new = result[group][variant]["records_per_s"]
            rate = old["records_per_s"]
            result[group][variant]["of_before"] = round(new / rate, 3) if rate else None
    if "cpu" in result:
        cpu = result["cpu"]
        cpu["processes_over_threads"] = round(
            cpu["processes"]["records_per_s"] / cpu["threads"]["records_per_s"], 2
        )
    print(
        json.dumps(
            {
                "records": args.records,
                "slow_records": args.slow_records,
                "value_bytes": round(mean_bytes, 1),
                "partitions": args.partitions,
                "keys": args.keys,
                "max_in_flight": args.max_in_flight,
                "batch_size": args.batch_size,
                "repeat": args.repeat,
                "cpu_ms": round(1000 * _handlers.time_loops(cpu_loops), 3),
                "embedded_broker": embedded,
                "gc": "default" if args.default_gc else "tuned as lagless consume",
                "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],
                **result,
                **({"before": {"src": args.before, **before}} if args.before else {}),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
