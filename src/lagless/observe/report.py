"""The run report: one self-contained HTML file drawn from a run timeline.

Plots (drawn by the shared chart code, ``lagless/ui/static/charts.js``, inlined with the vendored
uPlot by :mod:`lagless.ui.assets`): input rate beside processed rate, lag in records (all
partitions and per partition), lag in seconds, end-to-end latency percentiles, records in flight,
paused partitions (on their own axis), the dead-letter rate, and a chart of rebalance events (also
marked on every plot). The plots start where the records (or the first assignment) start: the
idle group join before is said, not drawn. Before them the run's settings (``run.json``) and a
summary table with the context of its figures, after them the list of events.
The file loads nothing from the network.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from lagless.errors import LaglessError
from lagless.observe.timeline import (
    RUN_FILE,
    RebalanceEvent,
    Sample,
    load_timeline,
    timeline_path,
)
from lagless.ui import assets
from lagless.ui.chartspec import Axis, Decor, Line, Marker, timeseries

REPORT_FILE = "report.html"

PLOT_IDS = (
    "plot-throughput",
    "plot-lag-records",
    "plot-lag-seconds",
    "plot-latency",
    "plot-in-flight",
    "plot-paused",
    "plot-dlq",
    "plot-rebalances",
)
MAX_PARTITION_LINES = 8  # lag per partition: the partitions with the most lag

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1360px; }
h1 { font-size: 20px; margin-bottom: 4px; }
h2 { font-size: 16px; margin-top: 28px; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 3px 12px 3px 0; text-align: left; border-bottom: 1px solid #eee;
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.why { color: #555; font-size: 13px; }
"""
REPORT_STYLE = "#summary th, #settings th { white-space: nowrap; }"


@dataclass(frozen=True)
class TimedEvent:
    at: float
    event: RebalanceEvent

    @property
    def label(self) -> str:
        e = self.event
        parts = []
        if e.assigned:
            parts.append(f"+{e.assigned} assigned")
        if e.revoked:
            parts.append(f"-{e.revoked} revoked")
        if e.lost:
            parts.append(f"{e.lost} lost")
        if not parts:
            parts.append(", ".join(f"{k} x{v}" for k, v in e.callbacks.items()) or "rebalance")
        if e.durations:
            parts.append(short_duration(e.duration_seconds))
        return " ".join(parts)


def short_duration(seconds: float) -> str:
    """1.7 ms, 250 ms, 2.5 s."""
    return f"{seconds * 1000:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def run_start(samples: Sequence[Sample]) -> float:
    """Epoch seconds at which the first interval began."""
    return samples[0].ts - samples[0].interval


def events(samples: Sequence[Sample]) -> list[TimedEvent]:
    t0 = run_start(samples)
    return [TimedEvent(s.ts - t0, e) for s in samples for e in s.events]


def processed_in_run(samples: Sequence[Sample]) -> float:
    """Records finished between the first interval's start and the last sample."""
    first = samples[0]
    return samples[-1].processed - (first.processed - first.throughput * first.interval)


def weighted_median(values: Sequence[tuple[float, float]]) -> float | None:
    """Median of ``(value, weight)`` pairs (weights: records in the interval)."""
    ranked = sorted((v, w) for v, w in values if w > 0)
    total = sum(w for _, w in ranked)
    if total <= 0:
        return None
    seen = 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= total / 2:
            return value
    return ranked[-1][0]


def fmt(value: float | None, unit: str = "") -> str:
    """Readable numbers: 12,345 / 12.3 / 0.0123."""
    if value is None:
        return "-"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}{unit}"
    return f"{value:.3g}{unit}"


def first_reported(samples: Sequence[Sample]) -> Sample | None:
    """The first sample in which the consumer reported a lag or a finished record."""
    return next((s for s in samples if s.lag_records or s.processed), None)


def backlog(samples: Sequence[Sample]) -> float:
    """The lag when the consumer first reported one: what waited when the run began."""
    first = first_reported(samples)
    return first.lag_records if first is not None else 0.0


def backlog_age(samples: Sequence[Sample]) -> float:
    """Lag in seconds at that first report: how old the oldest waiting record already was."""
    first = first_reported(samples)
    return first.lag_seconds if first is not None else 0.0


REBALANCE_CALLBACK_TIME = "rebalance callback time, total"
IN_FLIGHT_MAX = "in flight, max"
E2E_P50 = "e2e latency p50 (median interval)"


def summary(samples: Sequence[Sample]) -> list[tuple[str, str]]:
    """The rows of the summary table (label, value)."""
    last = samples[-1]
    start = run_start(samples)
    duration = max(last.ts - start, 1e-9)
    done = processed_in_run(samples)
    p50 = weighted_median(
        [(s.e2e_p50, s.throughput * s.interval) for s in samples if s.e2e_p50 is not None]
    )
    p95s = [s.e2e_p95 for s in samples if s.e2e_p95 is not None]
    p99s = [s.e2e_p99 for s in samples if s.e2e_p99 is not None]
    timed = events(samples)
    started = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    rows = [
        ("started", started),
        ("duration", f"{duration:.1f} s ({len(samples)} samples)"),
        ("records processed", fmt(done)),
        ("throughput, mean", fmt(done / duration, " records/s")),
        ("throughput, best interval", fmt(max(s.throughput for s in samples), " records/s")),
        ("lag (records) at start: the backlog found", fmt(backlog(samples))),
        ("lag (seconds) at start: the backlog's age", fmt(backlog_age(samples), " s")),
        ("lag (records), max / at end", f"{fmt(max(s.lag_records for s in samples))} / "
         f"{fmt(last.lag_records)}"),
        ("lag (seconds), max / at end", f"{fmt(max(s.lag_seconds for s in samples), ' s')} / "
         f"{fmt(last.lag_seconds, ' s')}"),
        (E2E_P50, fmt(p50, " s")),
        ("e2e latency p95 (worst interval)", fmt(max(p95s, default=None), " s")),
        ("e2e latency p99 (worst interval)", fmt(max(p99s, default=None), " s")),
        ("e2e latency p99 (median interval)",
         fmt(statistics.median(p99s) if p99s else None, " s")),
        (IN_FLIGHT_MAX, fmt(max(s.in_flight for s in samples))),
        ("paused partitions, max", fmt(max(s.paused for s in samples))),
        ("pause events", fmt(last.pause_events)),
        ("rebalance events", str(len(timed))),
        ("partitions assigned / revoked / lost",
         " / ".join(str(sum(getattr(t.event, k) for t in timed))
                    for k in ("assigned", "revoked", "lost"))),
        (REBALANCE_CALLBACK_TIME,
         short_duration(sum(t.event.duration_seconds for t in timed))),
        ("commits", fmt(last.commits)),
        ("dead-lettered records", fmt(last.dlq)),
    ]  # fmt: skip
    if last.batches:
        rows.append(("Spark micro-batches", fmt(last.batches)))
        durations = [s.batch_seconds for s in samples if s.batch_seconds]
        rows.append(("micro-batch duration, max", fmt(max(durations, default=None), " s")))
    return rows


def in_flight_context(settings: Mapping[str, object]) -> str:
    """What bounds the records in flight: the configured limit and the ordering."""
    parts = []
    if "max_in_flight" in settings:
        parts.append(f"the limit is max_in_flight {settings['max_in_flight']}")
    ordering = settings.get("ordering")
    if ordering == "key":
        parts.append("ordering=key runs one record per key at a time: at most one per distinct key")
    elif ordering == "partition":
        parts.append("ordering=partition runs one record per partition at a time")
    return "; ".join(parts)


def context(samples: Sequence[Sample], settings: Mapping[str, object]) -> dict[str, str]:
    """What explains a summary figure, by row label (rows without one are absent)."""
    notes = {
        REBALANCE_CALLBACK_TIME: "time spent inside this instance's rebalance callbacks "
        "(assign / revoke); not the group's disruption, which the rebalance lab measures as "
        "rebalance time",
    }
    age = backlog_age(samples)
    if age > 0:
        notes[E2E_P50] = (
            f"e2e counts from each record's timestamp: the oldest record waiting when the run "
            f"began was already {fmt(age, ' s')} old (the backlog's age), and every e2e figure "
            "here includes that wait"
        )
    bound = in_flight_context(settings)
    if bound:
        notes[IN_FLIGHT_MAX] = bound
    return notes


def summary_table(samples: Sequence[Sample], settings: Mapping[str, object]) -> str:
    notes = context(samples, settings)
    rows = "".join(
        f"<tr><th>{escape(label)}</th><td class=num>{escape(value)}</td>"
        f"<td class=why>{escape(notes.get(label, ''))}</td></tr>"
        for label, value in summary(samples)
    )
    return f"<table id=summary>{rows}</table>"


def active(sample: Sample) -> bool:
    return bool(
        sample.lag_records or sample.throughput or sample.in_flight or sample.input_rate
        or sample.events
    )  # fmt: skip


def chart_start(samples: Sequence[Sample]) -> float:
    """Seconds since the run's start where the plots begin: the start of the first interval with
    records (lag, processed, in flight, input) or a rebalance; 0 when there is none."""
    t0 = run_start(samples)
    first = next((s for s in samples if active(s)), None)
    return 0.0 if first is None else max(first.ts - first.interval - t0, 0.0)


def start_note(samples: Sequence[Sample]) -> str:
    start = chart_start(samples)
    if start <= 0:
        return ""
    return (
        f"The plots start at {start:.1f} s, when the first records or partitions came: before "
        f"that the consumer was joining its group with nothing to show ({start:.1f} s of "
        f"{samples[-1].ts - run_start(samples):.1f} s)."
    )


def charts(samples: Sequence[Sample]) -> list[dict[str, object]]:
    """Every plot's spec, in :data:`PLOT_IDS` order (plus the micro-batch plot of a Spark run)."""
    t0 = run_start(samples)
    xs = [s.ts - t0 for s in samples]
    axis = Axis(start=chart_start(samples), end=max(xs[-1], 1.0))
    marks = [Marker(t.at, t.event.kind, t.label) for t in events(samples)]

    def chart(chart_id: str, title: str, unit: str, *lines: Line) -> dict[str, object]:
        missing = [line.label for line in lines if all(v is None for v in line.values)]
        note = f"Not measured in this run: {', '.join(missing)}." if missing else ""
        return timeseries(chart_id, title, unit, xs, lines, axis, Decor(marks, note=note))

    return [
        chart("plot-throughput", "Input rate (end offsets) and processed rate", "records/s",
              Line("processed", [s.throughput for s in samples]),
              Line("input", [s.input_rate for s in samples])),
        chart("plot-lag-records", "Lag in records: all partitions and per partition", "records",
              Line("all", [s.lag_records for s in samples], total=True), *partition_lags(samples)),
        chart("plot-lag-seconds", "Lag in seconds (oldest partition)", "seconds",
              Line("lag", [s.lag_seconds for s in samples]),
              Line("oldest unfinished", [s.oldest_unfinished_seconds for s in samples])),
        chart("plot-latency", "End-to-end latency (record timestamp to done)", "seconds",
              Line("p50", [s.e2e_p50 for s in samples]),
              Line("p95", [s.e2e_p95 for s in samples]),
              Line("p99", [s.e2e_p99 for s in samples])),
        chart("plot-in-flight", "Records in flight", "records",
              Line("in flight", [s.in_flight for s in samples])),
        chart("plot-paused", "Partitions paused by backpressure", "partitions",
              Line("paused", [s.paused for s in samples])),
        chart("plot-dlq", "Records dead-lettered", "records/s",
              Line("to the DLQ", [s.dlq_rate for s in samples])),
        *([chart("plot-batches", "Spark micro-batch duration (last batch)", "seconds",
                 Line("batch", [s.batch_seconds or None for s in samples]))]
          if any(s.batches for s in samples) else []),
        timeseries("plot-rebalances", "Rebalance events", "", xs, (), axis,
                   Decor(marks, marker_labels=True, empty="no rebalances"), height=120),
    ]  # fmt: skip


def partition_lags(samples: Sequence[Sample]) -> list[Line]:
    """Lag in records per partition, for the partitions with the most lag."""
    peak: dict[str, float] = {}
    for sample in samples:
        for key, lag in sample.lag_partitions.items():
            peak[key] = max(peak.get(key, 0.0), lag)
    top = sorted(peak, key=lambda k: (-peak[k], k))[:MAX_PARTITION_LINES]
    return [Line(key, [s.lag_partitions.get(key) for s in samples]) for key in sorted(top)]


def settings_table(settings: Mapping[str, object]) -> str:
    if not settings:
        return "<p>No settings recorded (run.json is missing).</p>"
    rows = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
        for k, v in sorted(settings.items())
    )
    return f"<table id=settings>{rows}</table>"


def events_table(samples: Sequence[Sample]) -> str:
    timed = events(samples)
    if not timed:
        return "<p>No rebalance during the run.</p>"
    head = (
        "<tr><th>at</th><th>assigned</th><th>revoked</th><th>lost</th>"
        "<th>callbacks</th><th>callback time</th></tr>"
    )
    rows = [
        f"<tr><td>{t.at:.1f} s</td><td class=num>{t.event.assigned}</td>"
        f"<td class=num>{t.event.revoked}</td><td class=num>{t.event.lost}</td>"
        f"<td>{escape(', '.join(f'{k} x{v}' for k, v in t.event.callbacks.items()))}</td>"
        f"<td class=num>{short_duration(t.event.duration_seconds)}</td></tr>"
        for t in timed
    ]
    return f"<table id=events>{head}{''.join(rows)}</table>"


def build_report(
    samples: Sequence[Sample],
    title: str = "lagless run",
    settings: Mapping[str, object] | None = None,
) -> str:
    """The whole HTML document."""
    if not samples:
        raise LaglessError("the timeline has no samples: nothing to report")
    settings = settings or {}
    plots = "\n".join(assets.chart(spec) for spec in charts(samples))
    started = datetime.fromtimestamp(run_start(samples), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    note = start_note(samples)
    body = (
        f"<h1>{escape(title)}</h1>\n<p class=sub>run of {started}, "
        f"{len(samples)} samples</p>\n"
        f"<h2>Run settings</h2>\n{settings_table(settings)}\n"
        f"<h2>Summary</h2>\n{summary_table(samples, settings)}\n"
        f"<h2>Over time</h2>\n"
        + (f"<p id=plots-start>{escape(note)}</p>\n" if note else "")
        + f"{plots}\n<h2>Rebalance events</h2>\n{events_table(samples)}\n"
    )
    return assets.page(title, STYLE + REPORT_STYLE, body)


def read_settings(directory: Path) -> dict[str, object]:
    """The run's settings from ``run.json`` (empty when it is missing or unreadable)."""
    try:
        doc = json.loads((directory / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_report(directory: Path, output: Path | None = None, title: str | None = None) -> Path:
    """Read ``directory``'s timeline and write the report (default ``directory/report.html``)."""
    source = timeline_path(Path(directory))
    samples = load_timeline(source)
    if not samples:
        raise LaglessError(f"timeline {source} has no samples: nothing to report")
    target = output or source.parent / REPORT_FILE
    html = build_report(
        samples, title or f"lagless run: {source.parent.name}", read_settings(source.parent)
    )
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise LaglessError(f"cannot write the report to {target}: {exc}") from None
    return target
