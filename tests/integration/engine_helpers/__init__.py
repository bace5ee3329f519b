"""Shared by the engine's integration tests: producing jobs, ledgers of processed ids,
engine configs with test timings, and ``lagless consume`` subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lagless.engine import EngineConfig, Record
from lagless.ids import ID_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate

REPO = Path(__file__).resolve().parents[3]
LAGLESS = str(Path(sys.executable).parent / "lagless")
LEDGER_HANDLER = "tests.integration.engine_helpers.ledger:handle"
LEDGER_BATCH_HANDLER = "tests.integration.engine_helpers.ledger:handle_batch"
LEDGER_FAST_BATCH_HANDLER = "tests.integration.engine_helpers.ledger:handle_batch_fast"

# Tansu holds a JoinGroup for session.timeout.ms / 2: keep sessions short in tests.
GROUP_TIMINGS: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1500}
GROUP_FLAGS = ["--session-timeout-ms", "6000", "--heartbeat-ms", "1500"]


def engine_config(topic: str, group: str, **values: Any) -> EngineConfig:
    """An engine config with test timings; ``values`` override."""
    base: dict[str, Any] = {
        "topics": (topic,),
        "group": group,
        "on_failure": "skip",
        "until_idle_s": 1.5,
        **GROUP_TIMINGS,
    }
    base.update(values)
    if "dlq_topic" in values:
        base.pop("on_failure")
    return EngineConfig.build(**base)


def produce_jobs(
    conf: Mapping[str, Any],
    topic: str,
    count: int,
    sleep_ms: tuple[int, int] = (1, 5),
    keys: int = 0,
    prefix: str = "",
) -> list[str]:
    """Produce ``count`` jobs; their ids."""
    spec = WorkloadSpec(Workload.JOBS, keys=keys, sleep_ms=sleep_ms, seed=11, id_prefix=prefix)
    records = list(_take(generate(spec), count))
    result = run_load(conf, topic, records, count=count)
    assert result.produced == count, result
    return [r.id for r in records]


def produce_records(conf: Mapping[str, Any], topic: str, records: list[OutRecord]) -> None:
    result = run_load(conf, topic, records, count=len(records))
    assert result.produced == len(records), result


def _take(it: Iterable[OutRecord], n: int) -> Iterable[OutRecord]:
    for i, record in enumerate(it):
        if i >= n:
            return
        yield record


def record_id(record: Record) -> str:
    raw = record.header(ID_HEADER)
    assert raw is not None, f"{record.coordinates} has no {ID_HEADER} header"
    return raw.decode()


@dataclass
class Execution:
    id: str
    partition: int
    offset: int
    key: bytes | None
    started: float
    ended: float


@dataclass
class Ledger:
    """A thread-safe list of handler executions (in-process tests)."""

    executions: list[Execution] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Record, started: float) -> None:
        execution = Execution(
            record_id(record),
            record.partition,
            record.offset,
            record.key,
            started,
            time.monotonic(),
        )
        with self._lock:
            self.executions.append(execution)

    @property
    def ids(self) -> Counter[str]:
        return Counter(e.id for e in self.executions)


def read_ledgers(paths: Iterable[Path]) -> Counter[str]:
    """Ids in ledger files written by subprocess handlers (one id a line)."""
    counts: Counter[str] = Counter()
    for path in paths:
        if path.exists():
            counts.update(line for line in path.read_text().splitlines() if line)
    return counts


def assert_exactly_once(ledger: Counter[str], ids: list[str]) -> None:
    missing = set(ids) - set(ledger)
    extra = set(ledger) - set(ids)
    dupes = {i: n for i, n in ledger.items() if n > 1}
    assert not missing and not extra and not dupes, (
        f"missing {len(missing)} {sorted(missing)[:5]}, unexpected {sorted(extra)[:5]}, "
        f"duplicated {len(dupes)} {sorted(dupes)[:5]}"
    )


def consume_cmd(bootstrap: str, topic: str, group: str, *args: str) -> list[str]:
    """``lagless -v consume`` (INFO logs on stderr: assignments, for failure messages)."""
    return [LAGLESS, "-v", "--bootstrap", bootstrap, "consume", "--topic", topic, "--group", group,
            *GROUP_FLAGS, *args]  # fmt: skip


def spawn(
    cmd: list[str], ledger: Path, *, own_group: bool = False, **env: str
) -> subprocess.Popen[str]:
    """Start a ``lagless consume`` whose ledger handler writes to ``ledger`` (``own_group``:
    in a process group of its own, as a service manager starts it, for ``os.killpg``)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "LAGLESS_TEST_LEDGER": str(ledger), **env}
    full_env.pop("LAGLESS_BOOTSTRAP", None)
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
        start_new_session=own_group,
    )  # fmt: skip


def wait_for_lines(path: Path, n: int, timeout: float) -> int:
    """Wait until ``path`` has at least ``n`` lines; how many it has."""
    deadline = time.monotonic() + timeout
    lines = 0
    while time.monotonic() < deadline:
        lines = len(path.read_text().splitlines()) if path.exists() else 0
        if lines >= n:
            break
        time.sleep(0.05)
    return lines


def hung_yet(ledger: Path) -> bool:
    """Whether a handler of ``poll_thread`` hangs now (it noted ``hang`` in ``ledger``). Here,
    not there: importing that module makes every batch handler of the process inline."""
    return ledger.exists() and b"hang" in ledger.read_bytes()


def ctrl_c_twice(
    proc: subprocess.Popen[str], ready: Callable[[], bool], limit_s: float = 15.0
) -> tuple[int, str, str]:
    """Once ``ready()`` (within 60 s, ``proc`` running), Ctrl-C ``proc``: the first must not stop
    it within a second (it waits for what runs), the second within ``limit_s``; what it ended
    with (returncode, stdout, stderr)."""
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert time.monotonic() < deadline and proc.poll() is None, "never ready"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert proc.poll() is None, "the first Ctrl-C waits for what runs"
    proc.send_signal(signal.SIGINT)
    begun = time.monotonic()
    code, out, err = finish(proc, timeout=30)
    assert time.monotonic() - begun < limit_s, "the second Ctrl-C stops at once"
    return code, out, err


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    """Wait for ``proc`` (killing it past ``timeout``): (returncode, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"consumer did not finish in {timeout} s; stderr: {err[-2000:]}"
        ) from None
    return proc.returncode, out, err


def kill_and_restart(
    conf: Mapping[str, Any],
    cmd: list[str],
    ids: list[str],
    tmp_path: Path,
    *,
    topic: str,
    group: str,
    kill_after: int,
    duplicates_bound: int | None,
) -> dict[str, Any]:
    """Run ``cmd`` (a ledger-handler consumer), SIGKILL it once ``kill_after`` records are in
    its ledger, run it again to the end: every id processed, duplicates within the bound, the
    second run's summary counting what it did, everything committed. The second run's
    ``--json`` summary.

    ``duplicates_bound=None``: the duplicates are exactly the first run's records at or above
    the offsets committed when it died (commits are asynchronous: at a high rate, those the
    broker had not acknowledged yet add to ``--max-pending`` per partition)."""
    first_ledger, second_ledger = tmp_path / "first", tmp_path / "second"
    first = spawn(cmd, first_ledger)
    try:
        done = wait_for_lines(first_ledger, kill_after, timeout=60)
        assert done >= kill_after, f"the consumer processed only {done} records in 60 s"
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    assert sum(read_ledgers([first_ledger]).values()) < len(ids), "killed mid-work"
    time.sleep(1.0)  # a commit the broker had received before the kill is stored by now
    at_kill = committed_offsets(conf, group, [topic])
    assert at_kill, "progress was committed before the kill"

    second = spawn(cmd, second_ledger)
    code, out, err = finish(second, timeout=120)
    assert code == 0, err[-2000:]
    summary = json.loads(out)

    ledger = read_ledgers([first_ledger, second_ledger])
    assert set(ledger) == set(ids), f"lost {sorted(set(ids) - set(ledger))[:10]}"
    duplicates = sum(ledger.values()) - len(ids)
    if duplicates_bound is None:
        where = {header(m, ID_HEADER): (m.partition(), m.offset()) for m in read_all(conf, topic)}
        above = [
            rid for rid in read_ledgers([first_ledger])
            if where[rid.encode()][1] >= at_kill.get((topic, where[rid.encode()][0]), 0)
        ]  # fmt: skip
        assert duplicates == len(above), (duplicates, len(above))
    else:
        assert duplicates <= duplicates_bound, duplicates
    assert summary["processed"] == sum(read_ledgers([second_ledger]).values())
    assert sum(committed_offsets(conf, group, [topic]).values()) == len(ids)
    return summary  # type: ignore[no-any-return]
