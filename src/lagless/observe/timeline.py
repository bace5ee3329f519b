"""The run timeline: one JSON line per interval, sampled from a :class:`Metrics` registry.

A :class:`Recorder` runs a daemon thread that reads the registry once per ``interval`` and
appends a :class:`Sample` to ``DIRECTORY/timeline.jsonl`` (the file is started afresh by each
recorder; every line is flushed as it is written, so a crashed run keeps what it recorded)::

    with Recorder(metrics, Path("run1")):
        run_the_engine(metrics)

Rates and percentiles are over the interval, from counter and histogram deltas: the e2e
latency percentiles interpolate inside histogram buckets, like Prometheus'
``histogram_quantile``. When any rebalance counter moved during the interval the sample carries
an ``events`` entry with what moved. :func:`load_timeline` reads the file back, with a one-line
error naming the first malformed line.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, ValidationError

from lagless.errors import LaglessError
from lagless.observe.exact import exact_quantile
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)

TIMELINE_FILE = "timeline.jsonl"
RUN_FILE = "run.json"  # the run's settings (topic, group, handler, ...), for the report
FAST_SECONDS = 30.0  # the first seconds of a run are sampled four times per interval
PERCENTILES = (0.50, 0.95, 0.99)


class RebalanceEvent(BaseModel):
    """What the rebalance counters did during one interval."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    assigned: int = 0
    revoked: int = 0
    lost: int = 0
    callbacks: dict[str, int] = {}
    durations: int = 0
    duration_seconds: float = 0.0

    @property
    def kind(self) -> str:
        """The dominant change, for labels: lost beats revoked beats assigned."""
        if self.lost:
            return "lost"
        if self.revoked:
            return "revoked"
        if self.assigned:
            return "assigned"
        return next(iter(self.callbacks), "rebalance")


class Sample(BaseModel):
    """One line of the timeline."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    ts: float
    interval: float = 0.0
    throughput: float = 0.0
    input_rate: float | None = None
    processed: float = 0.0
    lag_records: float = 0.0
    lag_seconds: float = 0.0
    e2e_p50: float | None = None
    e2e_p95: float | None = None
    e2e_p99: float | None = None
    e2e_exact: bool = False
    in_flight: float = 0.0
    paused: float = 0.0
    pause_events: float = 0.0
    rebalances: float = 0.0
    commits: float = 0.0
    dlq: float = 0.0
    dlq_rate: float = 0.0
    oldest_unfinished_seconds: float = 0.0
    batches: float = 0.0
    batch_seconds: float = 0.0
    lag_partitions: dict[str, float] = {}
    events: list[RebalanceEvent] = []


@dataclass
class Snapshot:
    """Totals read from a registry at one moment (counters summed over labels)."""

    processed: float = 0.0
    lag_records: float = 0.0
    lag_seconds: float = 0.0
    in_flight: float = 0.0
    paused: float = 0.0
    pause_events: float = 0.0
    commits: float = 0.0
    dlq: float = 0.0
    oldest_unfinished: float = 0.0
    batches: float = 0.0
    batch_seconds: float = 0.0
    assigned: float = 0.0
    revoked: float = 0.0
    lost: float = 0.0
    rebalance_count: float = 0.0
    rebalance_sum: float = 0.0
    callbacks: dict[str, float] = field(default_factory=dict)
    e2e_buckets: dict[float, float] = field(default_factory=dict)
    ends: dict[str, float] = field(default_factory=dict)  # "topic[p]" -> end offset
    lags: dict[str, float] = field(default_factory=dict)  # "topic[p]" -> lag in records


_SUMS = {
    "lagless_records_processed_total": "processed",
    "lagless_lag_records": "lag_records",
    "lagless_in_flight": "in_flight",
    "lagless_paused_partitions": "paused",
    "lagless_pause_events_total": "pause_events",
    "lagless_commits_total": "commits",
    "lagless_dlq_records_total": "dlq",
    "lagless_batches_total": "batches",
    "lagless_partitions_assigned_total": "assigned",
    "lagless_partitions_revoked_total": "revoked",
    "lagless_partitions_lost_total": "lost",
    "lagless_rebalance_callback_seconds_count": "rebalance_count",
    "lagless_rebalance_callback_seconds_sum": "rebalance_sum",
}
_MAXES = {
    "lagless_lag_seconds": "lag_seconds",
    "lagless_oldest_unfinished_age_seconds": "oldest_unfinished",
    "lagless_batch_seconds": "batch_seconds",
}


def snapshot(metrics: Metrics) -> Snapshot:
    """Read every lagless metric once."""
    snap = Snapshot()
    for family in metrics.registry.collect():
        for s in family.samples:
            if s.name == "lagless_end_offset":
                snap.ends[partition_key(s.labels)] = s.value
            elif s.name == "lagless_lag_records":
                snap.lags[partition_key(s.labels)] = s.value
            if s.name in _SUMS:
                attr = _SUMS[s.name]
                setattr(snap, attr, getattr(snap, attr) + s.value)
            elif s.name in _MAXES:
                attr = _MAXES[s.name]
                setattr(snap, attr, max(getattr(snap, attr), s.value))
            elif s.name == "lagless_rebalances_total":
                kind = s.labels.get("kind", "")
                snap.callbacks[kind] = snap.callbacks.get(kind, 0.0) + s.value
            elif s.name == "lagless_e2e_latency_seconds_bucket":
                le = float(s.labels["le"])
                snap.e2e_buckets[le] = snap.e2e_buckets.get(le, 0.0) + s.value
    return snap


def partition_key(labels: Mapping[str, str]) -> str:
    return f"{labels.get('topic', '')}[{labels.get('partition', '')}]"


def input_rate(now: Snapshot, before: Snapshot, seconds: float) -> float | None:
    """Records/s written to the consumed partitions: the rise of their end offsets (a partition
    first seen in this interval adds nothing). None before any end offset is known."""
    if not now.ends or seconds <= 0:
        return None
    rise = sum(max(0.0, end - before.ends.get(key, end)) for key, end in now.ends.items())
    return round(rise / seconds, 3)


def quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """The ``q`` quantile of cumulative histogram ``buckets`` (upper bound -> count).

    Linear interpolation inside the bucket holding the rank, as Prometheus does; a rank in the
    ``+Inf`` bucket gives the highest finite bound. None when the histogram is empty.
    """
    bounds = sorted(buckets)
    if not bounds:
        return None
    total = buckets[bounds[-1]]
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for upper in bounds:
        count = buckets[upper]
        if count >= rank and count > below:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * (rank - below) / (count - below)
        lower, below = (upper if not math.isinf(upper) else lower), count
    return lower


def bucket_delta(now: Mapping[float, float], before: Mapping[float, float]) -> dict[float, float]:
    return {le: count - before.get(le, 0.0) for le, count in now.items()}


def rebalance_event(now: Snapshot, before: Snapshot) -> RebalanceEvent | None:
    """The rebalance activity between two snapshots, None if there was none."""
    callbacks = {
        kind: int(count - before.callbacks.get(kind, 0.0))
        for kind, count in sorted(now.callbacks.items())
        if count != before.callbacks.get(kind, 0.0)
    }
    event = RebalanceEvent(
        assigned=int(now.assigned - before.assigned),
        revoked=int(now.revoked - before.revoked),
        lost=int(now.lost - before.lost),
        callbacks=callbacks,
        durations=int(now.rebalance_count - before.rebalance_count),
        duration_seconds=round(now.rebalance_sum - before.rebalance_sum, 6),
    )
    moved = event.assigned or event.revoked or event.lost or event.callbacks or event.durations
    return event if moved else None


def make_sample(
    now: Snapshot,
    before: Snapshot,
    ts: float,
    seconds: float,
    exact: Sequence[float] | None = None,
) -> Sample:
    """The sample for the interval between ``before`` and ``now`` (``seconds`` long).

    ``exact``: every e2e latency observed in the interval, when all were kept; the
    percentiles are then exact, else interpolated in the histogram's buckets."""
    if exact:
        ordered = sorted(exact)
        p50, p95, p99 = (exact_quantile(q, ordered) for q in PERCENTILES)
    else:
        delta = bucket_delta(now.e2e_buckets, before.e2e_buckets)
        p50, p95, p99 = (quantile(q, delta) for q in PERCENTILES)
    event = rebalance_event(now, before)
    return Sample(
        ts=round(ts, 3),
        interval=round(seconds, 6),
        throughput=round((now.processed - before.processed) / seconds, 3) if seconds > 0 else 0.0,
        input_rate=input_rate(now, before, seconds),
        processed=now.processed,
        lag_records=now.lag_records,
        lag_seconds=round(now.lag_seconds, 6),
        e2e_p50=None if p50 is None else round(p50, 6),
        e2e_p95=None if p95 is None else round(p95, 6),
        e2e_p99=None if p99 is None else round(p99, 6),
        e2e_exact=bool(exact),
        in_flight=now.in_flight,
        paused=now.paused,
        pause_events=now.pause_events,
        rebalances=sum(now.callbacks.values()),
        commits=now.commits,
        dlq=now.dlq,
        dlq_rate=round((now.dlq - before.dlq) / seconds, 3) if seconds > 0 else 0.0,
        lag_partitions=dict(sorted(now.lags.items())),
        oldest_unfinished_seconds=round(now.oldest_unfinished, 6),
        batches=now.batches,
        batch_seconds=now.batch_seconds,
        events=[event] if event is not None else [],
    )


class Recorder:
    """Samples ``metrics`` every ``interval`` seconds into ``directory/timeline.jsonl``.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. Stopping writes one last
    (possibly shorter) sample, so even a run shorter than one interval leaves a line.
    """

    def __init__(
        self,
        metrics: Metrics,
        directory: Path,
        interval: float = 1.0,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        if interval <= 0:
            raise LaglessError(f"timeline interval must be positive, not {interval}")
        self.settings = dict(settings or {})
        self.metrics = metrics
        self.directory = Path(directory)
        self.interval = interval
        self.path = self.directory / TIMELINE_FILE
        self.samples_written = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: IO[str] | None = None
        self._last = Snapshot()
        self._last_t = 0.0

    def start(self) -> Recorder:
        if self._thread is not None:
            return self
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
            if self.settings:
                text = json.dumps(self.settings, sort_keys=True, default=str)
                (self.directory / RUN_FILE).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise LaglessError(f"cannot write the timeline to {self.path}: {exc}") from None
        self._last = snapshot(self.metrics)
        self._last_t = time.monotonic()
        self.metrics.e2e_exact.drain()
        self.metrics.e2e_exact.enabled = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="lagless-timeline", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout=max(5.0, 2 * self.interval))
        self._thread = None
        self.sample(final=True)
        self.metrics.e2e_exact.enabled = False
        self.metrics.e2e_exact.drain()
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sample(self, final: bool = False) -> Sample | None:
        """Take one sample now and write it (called by the thread; safe to call directly).

        The ``final`` sample of :meth:`stop` is skipped when its interval is under half an
        interval and nothing was processed in it (it would only show a false drop to 0).
        """
        if self._file is None:
            return None
        now_t = time.monotonic()
        now = snapshot(self.metrics)
        short = now_t - self._last_t < self.interval / 2
        if final and short and self.samples_written and now.processed == self._last.processed:
            return None
        values, complete = self.metrics.e2e_exact.drain()
        exact = values if complete else None
        out = make_sample(now, self._last, time.time(), now_t - self._last_t, exact)
        self._last, self._last_t = now, now_t
        try:
            self._file.write(out.model_dump_json(exclude_defaults=False) + "\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            log.warning("cannot write timeline sample to %s: %s", self.path, exc)
            return None
        self.samples_written += 1
        return out

    def _run(self) -> None:
        """Sample every ``interval`` (every quarter interval during the first
        :data:`FAST_SECONDS`, so a short run shows its lag and concurrency)."""
        started = time.monotonic()

        def step() -> float:
            fast = time.monotonic() - started < FAST_SECONDS
            return self.interval / 4 if fast else self.interval

        next_at = started + step()
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            self.sample()
            next_at += step()
            if next_at < time.monotonic():  # fell behind (a stalled process): do not burst
                next_at = time.monotonic() + step()


def timeline_path(path: Path) -> Path:
    """``path`` itself if it is a file, else ``path/timeline.jsonl``."""
    return path / TIMELINE_FILE if path.is_dir() else path


def load_timeline(path: Path) -> list[Sample]:
    """Every sample in a timeline file (or a directory holding ``timeline.jsonl``).

    Raises LaglessError with one line naming the file and line number of a malformed line.
    """
    target = timeline_path(Path(path))
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LaglessError(f"no timeline at {target}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LaglessError(f"cannot read timeline {target}: {exc}") from None
    return parse_lines(text.splitlines(), str(target))


def parse_lines(lines: Iterable[str], source: str = "timeline") -> list[Sample]:
    samples: list[Sample] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise LaglessError(f"{source}:{number}: malformed timeline line: {exc}") from None
        if not isinstance(doc, dict):
            raise LaglessError(f"{source}:{number}: malformed timeline line: not a JSON object")
        try:
            samples.append(Sample.model_validate(doc))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "sample"
            raise LaglessError(
                f"{source}:{number}: malformed timeline line: {where}: {first['msg']}"
            ) from None
    return samples
