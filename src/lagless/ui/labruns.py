"""The Lab page: the rebalance lab's runs under ``out/lab/`` (``lagless lab run``), each with a
link to its page, and a running lab's progress (per scenario and instance: the last group-life
event and the last lag the instance recorded), read from the files the lab writes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from lagless.engine.events import EVENTS_FILE
from lagless.ui.pages import cell, e, table

REPORT = "report.html"
TIMELINE = "timeline.jsonl"
RUNNING_WITHIN_S = 30.0
MAX_RUNS = 30
TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json",
         ".jsonl": "application/json", ".log": "text/plain; charset=utf-8"}  # fmt: skip


def last_line(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 8192))
            lines = fh.read().decode("utf-8", "replace").strip().splitlines()
        doc = json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def newest(directory: Path) -> float:
    times = [p.stat().st_mtime for p in directory.rglob("*") if p.is_file()]
    return max(times, default=directory.stat().st_mtime)


def instance_rows(run: Path) -> list[list[str]]:
    rows = []
    for events in sorted(run.rglob(EVENTS_FILE)):
        inst = events.parent
        last = last_line(events) or {}
        sample = last_line(inst / TIMELINE) or {}
        scenario = inst.parent.relative_to(run).as_posix() if inst.parent != run else "-"
        rows.append([
            cell(scenario, "name"), cell(inst.name, "name"), cell(last.get("kind")),
            cell(time.strftime("%H:%M:%S", time.gmtime(last["ts"])) if "ts" in last else None),
            cell(sample.get("lag_records")), cell(sample.get("processed")),
        ])  # fmt: skip
    return rows


def lab_page(lab_dir: Path) -> str:
    if not lab_dir.is_dir():
        return (f"<h2>Lab</h2><p>No lab runs in <code>{e(lab_dir)}</code> yet "
                "(<code>lagless lab run</code> writes them there).</p>")  # fmt: skip
    runs = sorted((p for p in lab_dir.iterdir() if p.is_dir()), reverse=True)[:MAX_RUNS]
    now = time.time()
    parts = [f"<h2>Lab</h2><p class='note'>runs in <code>{e(lab_dir)}</code>, newest first</p>"]
    summary = []
    for run in runs:
        done = (run / REPORT).exists()
        running = not done and now - newest(run) < RUNNING_WITHIN_S
        state = "done" if done else "running" if running else "unfinished"
        link = (f"<td class='name'><a href='/lab/files/{e(run.name)}/{REPORT}'>{e(run.name)}</a>"
                "</td>") if done else cell(run.name, "name")  # fmt: skip
        scenarios = sorted(p.name for p in run.iterdir() if p.is_dir())
        summary.append([link, cell(state, "OK" if done else "WARN"),
                        cell(", ".join(scenarios) or "-", "name")])  # fmt: skip
        if running:
            parts.append(f"<h3>running: {e(run.name)}</h3>" + table(
                "lab-progress",
                (("scenario", "scenario"), ("instance", "instance"), ("event", "last event"),
                 ("at", "at (UTC)"), ("lag", "unfinished lag"), ("processed", "processed")),
                instance_rows(run),
            ))  # fmt: skip
    parts.append(table("lab-runs", (("run", "run"), ("state", "state"),
                                    ("scenarios", "scenarios")), summary))  # fmt: skip
    return "".join(parts)


def lab_file(lab_dir: Path, rel: str) -> tuple[bytes | None, str]:
    """A file of a lab run (only below ``lab_dir``; only pages and records)."""
    base = lab_dir.resolve()
    path = (base / rel).resolve()
    kind = TYPES.get(path.suffix)
    if kind is None or not path.is_relative_to(base) or not path.is_file():
        return None, ""
    return path.read_bytes(), kind
