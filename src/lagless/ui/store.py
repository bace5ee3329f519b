"""The console's history: one SQLite file (standard library) in the per-user state directory.

Every cycle writes each group's totals (committed lag, max lag in seconds, members, state,
status); a partition's row (committed, end, lag, lag seconds, owners) and a topic partition's end
are written when they changed, and at least every ``KEEPALIVE_S``; rebalances when they close.
Rows older than ``retention`` seconds are deleted, and when the file grows past ``max_bytes``
the oldest rows go first (a fifth at a time) until it is back under, so it never grows past its
bound by more than a cycle's rows. History survives a restart of the console.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lagless.ui.model import Rebalance, Snapshot

STORE_FILE = "ui.sqlite"
KEEPALIVE_S = 60.0
PRUNE_EVERY_S = 10.0
MAX_POINTS = 1500

SCHEMA = """
CREATE TABLE IF NOT EXISTS groups (t REAL, grp TEXT, lag INTEGER, lag_s REAL, members INTEGER,
    state TEXT, status TEXT);
CREATE INDEX IF NOT EXISTS groups_by_t ON groups (grp, t);
CREATE INDEX IF NOT EXISTS groups_t ON groups (t);
CREATE TABLE IF NOT EXISTS parts (t REAL, grp TEXT, topic TEXT, part INTEGER, committed INTEGER,
    end_ INTEGER, lag INTEGER, lag_s REAL, owners TEXT);
CREATE INDEX IF NOT EXISTS parts_by_t ON parts (grp, t);
CREATE INDEX IF NOT EXISTS parts_t ON parts (t);
CREATE TABLE IF NOT EXISTS topics (t REAL, topic TEXT, part INTEGER, end_ INTEGER);
CREATE INDEX IF NOT EXISTS topics_by_t ON topics (topic, t);
CREATE INDEX IF NOT EXISTS topics_t ON topics (t);
CREATE TABLE IF NOT EXISTS rebalances (grp TEXT, at REAL, duration_s REAL, moved INTEGER);
CREATE INDEX IF NOT EXISTS rebalances_by_at ON rebalances (grp, at);
CREATE TABLE IF NOT EXISTS cluster (t REAL, up INTEGER, error TEXT);
"""
TIMED = ("groups", "parts", "topics", "rebalances", "cluster")


class Store:
    """Thread-safe (one connection behind a lock): the sampler writes, the server reads."""

    def __init__(
        self, path: Path, retention: float = 86400.0, max_bytes: int = 256 * 1024 * 1024
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.retention = retention
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._last_part: dict[tuple[str, str, int], tuple[Any, ...]] = {}
        self._last_topic: dict[tuple[str, int], tuple[int, float]] = {}
        self._last_up: bool | None = None
        self._pruned = 0.0

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def write(self, snap: Snapshot) -> None:
        """One cycle's rows (group totals always; partitions and topics when changed)."""
        t = snap.t
        with self._tx() as db:
            if snap.up != self._last_up:
                db.execute("INSERT INTO cluster VALUES (?, ?, ?)", (t, int(snap.up), snap.error))
                self._last_up = snap.up
            if not snap.up:
                return
            db.executemany(
                "INSERT INTO groups VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(t, g.group, g.lag, g.lag_s, g.members, g.state, g.status) for g in snap.groups],
            )
            rows = []
            for g in snap.groups:
                for p in g.partitions:
                    key = (g.group, p.topic, p.partition)
                    value = (p.committed, p.end, p.lag, p.lag_s, p.owners)
                    last = self._last_part.get(key)
                    if last is None or last[:-1] != value or t - last[-1] >= KEEPALIVE_S:
                        self._last_part[key] = (*value, t)
                        rows.append((t, *key, p.committed, p.end, p.lag, p.lag_s,
                                     json.dumps(list(p.owners))))  # fmt: skip
            db.executemany("INSERT INTO parts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            ends = []
            for topic in snap.topics:
                for partition, end in enumerate(topic.ends):
                    seen = self._last_topic.get((topic.topic, partition))
                    if seen is None or seen[0] != end or t - seen[1] >= KEEPALIVE_S:
                        self._last_topic[(topic.topic, partition)] = (end, t)
                        ends.append((t, topic.topic, partition, end))
            db.executemany("INSERT INTO topics VALUES (?, ?, ?, ?)", ends)
            db.executemany(
                "INSERT INTO rebalances VALUES (?, ?, ?, ?)",
                [(r.group, r.at, r.duration_s, r.moved) for r in snap.rebalances],
            )
        if time.monotonic() - self._pruned >= PRUNE_EVERY_S:
            self.prune(t)

    def size(self) -> int:
        """Bytes the store's pages take (the file, without the write-ahead log)."""
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    def prune(self, now: float | None = None) -> None:
        """Delete rows past the retention, then the oldest until under ``max_bytes``."""
        now = time.time() if now is None else now
        self._pruned = time.monotonic()
        cutoff = now - self.retention
        with self._tx() as db:
            for table in TIMED:
                column = "at" if table == "rebalances" else "t"
                db.execute(f"DELETE FROM {table} WHERE {column} < ?", (cutoff,))
        for _ in range(20):
            if self.size() <= self.max_bytes:
                break
            with self._tx() as db:
                row = db.execute(
                    "SELECT t FROM parts ORDER BY t LIMIT 1 OFFSET (SELECT COUNT(*) / 5 FROM parts)"
                ).fetchone()
                first = db.execute("SELECT MIN(t), MAX(t) FROM groups").fetchone()
                step = None if first[0] is None else first[0] + (first[1] - first[0]) / 5
                upto = max(x for x in (row[0] if row else None, step, 0.0) if x is not None)
                for table in ("groups", "parts", "topics"):
                    db.execute(f"DELETE FROM {table} WHERE t <= ?", (upto,))
            self._last_part.clear()
            self._last_topic.clear()
        with self._lock:
            self._db.executescript("PRAGMA incremental_vacuum;")  # stepped to the end (all pages)
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # reads

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._db.execute(sql, args).fetchall())

    def group_series(
        self, group: str, since: float, until: float
    ) -> list[tuple[float, int, float]]:
        """(t, lag, lag_s) of a group, at most ``MAX_POINTS`` (the largest of each bucket)."""
        step = max((until - since) / MAX_POINTS, 1e-9)
        return [
            (float(t), int(lag), float(lag_s or 0.0))
            for t, lag, lag_s in self._rows(
                "SELECT MAX(t), MAX(lag), MAX(lag_s) FROM groups WHERE grp = ? AND t >= ? "
                "AND t <= ? GROUP BY CAST((t - ?) / ? AS INTEGER) ORDER BY 1",
                (group, since, until, since, step),
            )
        ]

    def partition_rows(self, group: str, since: float, until: float) -> list[dict[str, Any]]:
        """The partition rows of a group in the range, plus the last one before it (the state
        the range starts in), in time order."""
        before = self._rows(
            "SELECT p.* FROM parts p JOIN (SELECT topic, part, MAX(t) AS t FROM parts "
            "WHERE grp = ? AND t < ? GROUP BY topic, part) b ON p.topic = b.topic "
            "AND p.part = b.part AND p.t = b.t WHERE p.grp = ?",
            (group, since, group),
        )
        inside = self._rows(
            "SELECT * FROM parts WHERE grp = ? AND t >= ? AND t <= ? ORDER BY t",
            (group, since, until),
        )
        return [
            {"t": r[0], "topic": r[2], "partition": r[3], "committed": r[4], "end": r[5],
             "lag": r[6], "lag_s": r[7], "owners": json.loads(r[8])}
            for r in sorted(before, key=lambda r: r[0]) + inside
        ]  # fmt: skip

    def rebalances(self, group: str, since: float, until: float) -> list[Rebalance]:
        return [
            Rebalance(group, at, duration, moved)
            for at, duration, moved in self._rows(
                "SELECT at, duration_s, moved FROM rebalances WHERE grp = ? AND at >= ? "
                "AND at <= ? ORDER BY at",
                (group, since, until),
            )
        ]

    def topic_ends(self, topic: str, since: float, until: float) -> list[tuple[float, int]]:
        """(t, sum of the partitions' ends) over time, from the rows written on change."""
        rows = self._rows(
            "SELECT t, part, end_ FROM topics WHERE topic = ? AND t <= ? ORDER BY t",
            (topic, until),
        )
        ends: dict[int, int] = {}
        out: list[tuple[float, int]] = []
        for t, part, end in rows:
            ends[int(part)] = int(end)
            if t >= since:
                if out and out[-1][0] == t:
                    out.pop()
                out.append((float(t), sum(ends.values())))
        return out

    def outages(self, since: float) -> list[tuple[float, bool, str | None]]:
        return [(float(t), bool(up), err) for t, up, err in self._rows(
            "SELECT t, up, error FROM cluster WHERE t >= ? ORDER BY t", (since,))]  # fmt: skip
