"""Engine instances seen by the console: local ones through the state directory, remote ones
(``--scrape HOST:PORT``) through their ``/status`` and ``/metrics``.

A remote ``/status`` answers one object (``lagless consume``) or a list of them, one per handler
(``lagless run``: an App's handlers may be in several groups); each object names its group. An
App's ``/metrics`` holds every handler's samples, labelled ``handler``: each handler's figures
are read from its own samples (``/metrics`` is read once per instance and look).

Each look (one per sampler cycle) reads every instance's status (owned partitions, generation,
position, first unfinished offset, in flight, paused: :mod:`lagless.observe.instance`) and, where
it serves metrics, its ``/metrics``: from the change since the previous look it derives the e2e
latency p50/p99 over the interval (interpolated in the histogram's buckets, as PromQL's
``histogram_quantile``), the dead-letter rate and its group-life events (rebalance callbacks by
kind). A remote instance that does not answer is left out of that look.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from lagless.observe.instance import live_instances

log = logging.getLogger(__name__)

KEEP_S = 3600.0  # the in-memory history of scraped figures
# what a target that is down, hung or not speaking HTTP/JSON raises: it is left out of that look
SCRAPE_ERRORS = (OSError, ValueError, http.client.HTTPException)


def quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """``histogram_quantile``: ``buckets`` are (upper bound, cumulative count) ascending."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = bound, count
    return lower


@dataclass
class Scraped:
    """What one instance's ``/metrics`` said (totals), and when."""

    t: float
    buckets: dict[float, float]
    in_flight: float
    paused: float
    dlq: float
    callbacks: dict[str, float]


def parse(text: str, t: float, handler: str | None = None) -> Scraped:
    """The figures of ``text`` (Prometheus' format); given ``handler``, of its samples only."""
    buckets: dict[float, float] = {}
    callbacks: dict[str, float] = {}
    in_flight = paused = dlq = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if handler is not None and s.labels.get("handler") != handler:
                continue
            if s.name == "lagless_e2e_latency_seconds_bucket":
                bound = float(s.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + s.value
            elif s.name == "lagless_in_flight":
                in_flight += s.value
            elif s.name == "lagless_paused_partitions":
                paused += s.value
            elif s.name == "lagless_dlq_records_total":
                dlq += s.value
            elif s.name == "lagless_rebalances_total":
                kind = s.labels.get("kind", "")
                callbacks[kind] = callbacks.get(kind, 0.0) + s.value
    return Scraped(t, buckets, in_flight, paused, dlq, callbacks)


@dataclass(frozen=True)
class Point:
    """One instance's figures over one interval."""

    t: float
    instance: str
    e2e_p50: float | None
    e2e_p99: float | None
    in_flight: float
    paused: float
    dlq_rate: float
    events: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "instance": self.instance, "e2e_p50": self.e2e_p50,
                "e2e_p99": self.e2e_p99, "in_flight": self.in_flight, "paused": self.paused,
                "dlq_rate": self.dlq_rate, "events": self.events}  # fmt: skip


def interval(before: Scraped, after: Scraped, instance: str) -> Point:
    dt = max(after.t - before.t, 1e-9)
    bounds = sorted(after.buckets)
    delta = [(b, after.buckets[b] - before.buckets.get(b, 0.0)) for b in bounds]
    events = {
        kind: int(n - before.callbacks.get(kind, 0.0))
        for kind, n in after.callbacks.items()
        if n > before.callbacks.get(kind, 0.0)
    }
    return Point(
        after.t, instance, quantile(0.5, delta), quantile(0.99, delta), after.in_flight,
        after.paused, round(max(0.0, after.dlq - before.dlq) / dt, 3), events,
    )  # fmt: skip


def fetch(url: str, timeout: float = 2.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return str(reply.read().decode("utf-8", "replace"))


# a partition's figures an instance publishes (lagless.observe.instance): a number or null
NUMBERS = ("since", "first_unfinished", "position", "in_flight", "generation")


def number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def checked(docs: list[Any], problems: list[str]) -> list[dict[str, Any]]:
    """The well-formed instance objects of ``docs`` and, of each, its well-formed partitions;
    each one left out adds its reason to ``problems`` (a page never reads a malformed one)."""
    out = []
    for d in docs:
        if not isinstance(d, dict) or not isinstance(d.get("group"), str):
            problems.append("an instance without a group id left out")
            continue
        if not isinstance(d.get("partitions"), list) or not isinstance(d.get("client_id"), str):
            problems.append(f"an instance of group {d['group']!r} without a client id or a "
                            "partition list left out")  # fmt: skip
            continue
        parts = []
        for p in d["partitions"]:
            ok = isinstance(p, dict) and isinstance(p.get("topic"), str)
            ok = ok and isinstance(p.get("partition"), int) and not isinstance(p["partition"], bool)
            bad = [k for k in NUMBERS if ok and not number_or_none(p.get(k))]
            if ok and not bad:
                parts.append(p)
            else:
                what = f"{p.get('topic')}[{p.get('partition')}]" if isinstance(p, dict) else "?"
                why = ", ".join(bad) or "no topic and partition"
                problems.append(f"instance {d['client_id']!r}: partition {what} left out "
                                f"({why} malformed)")  # fmt: skip
        out.append({**d, "partitions": parts})
    return out


def status_objects(answer: Any, problems: list[str] | None = None) -> list[dict[str, Any]] | None:
    """The instance objects of a ``/status`` answer: one object, or a list of them (one per
    handler of an App); None when it is neither. Malformed objects and partitions are left
    out (:func:`checked`), their reasons added to ``problems``."""
    found = [answer] if isinstance(answer, dict) else answer if isinstance(answer, list) else None
    if found is None:
        return None
    return checked(found, [] if problems is None else problems)


def distinct(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each instance's handler once, the first time it is seen: a local instance also given
    to ``--scrape`` is seen through its file and its ``/status``."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for doc in docs:
        key = tuple(doc.get(k) for k in ("host", "pid", "group", "client_id", "handler"))
        if key not in seen:
            seen.add(key)
            out.append(doc)
    return out


class Instances:
    """The instances the console watches and their scraped figures (per group, last hour)."""

    def __init__(
        self, state_dir: Path, targets: Sequence[str] = (), fetcher: Callable[[str], str] = fetch
    ) -> None:
        self.state_dir = state_dir
        self.targets = list(targets)
        self._fetch = fetcher
        self._lock = threading.Lock()
        self._last: dict[str, Scraped] = {}
        self._points: dict[str, deque[Point]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.errors: dict[str, str] = {}  # per target, why its last look failed

    def _get(self, url: str) -> str | Exception:
        try:
            return self._fetch(url)
        except SCRAPE_ERRORS as exc:
            return exc

    def _get_all(self, urls: Sequence[str]) -> list[str | Exception]:
        """Each URL's text (or why not), fetched at once: a hung target costs one timeout per
        look, not one per target."""
        if len(urls) < 2:
            return [self._get(u) for u in urls]
        with ThreadPoolExecutor(min(len(urls), 16), "lagless-ui-scrape") as pool:
            return list(pool.map(self._get, urls))

    def look(self) -> list[dict[str, Any]]:
        """Read every instance's status (and metrics); the live ones' statuses."""
        now = time.time()
        errors: dict[str, str] = {}
        problems: list[str] = []
        local = checked(live_instances(self.state_dir, now), problems)
        if problems:
            errors["local"] = "; ".join(problems)
        docs = [{**d, "source": "local"} for d in local]
        answers = self._get_all([f"http://{t}/status" for t in self.targets])
        for target, answer in zip(self.targets, answers, strict=True):
            try:
                if isinstance(answer, Exception):
                    raise answer
                problems = []
                found = status_objects(json.loads(answer), problems)
            except SCRAPE_ERRORS as exc:
                errors[target] = f"/status: {type(exc).__name__}: {exc}"
                log.info("instance %s does not answer /status: %r", target, exc)
                continue
            if found is None:
                errors[target] = "/status: neither an object nor a list of them"
                log.info("instance %s: /status is neither an object nor a list of them", target)
                continue
            if problems:
                errors[target] = "/status: " + "; ".join(problems)
                log.info("instance %s: %s", target, errors[target])
            # its /metrics is beside the /status it answered (the URL it names is its own view)
            docs.extend({**d, "metrics": f"http://{target}", "source": target} for d in found)
        docs = distinct(docs)
        urls = sorted({str(d["metrics"]) for d in docs if d.get("metrics")})
        texts: dict[str, str | None] = {}  # each /metrics once, for all its handlers
        for url, text in zip(urls, self._get_all([f"{u}/metrics" for u in urls]), strict=True):
            if isinstance(text, Exception):
                log.info("cannot scrape %s: %r", url, text)
                errors.setdefault(url.removeprefix("http://"), f"/metrics: {text!r}")
            texts[url] = None if isinstance(text, Exception) else text
        for doc in docs:
            if doc.get("metrics"):
                self._scrape(doc, now, texts)
        with self._lock:
            self.statuses = docs
            self.errors = errors
        return docs

    def _scrape(self, doc: dict[str, Any], now: float, texts: dict[str, str | None]) -> None:
        url = str(doc["metrics"])
        handler = doc.get("handler") if isinstance(doc.get("handler"), str) else None
        key = f"{doc.get('group')}\0{doc.get('client_id')}\0{doc.get('pid')}\0{handler}"
        text = texts.get(url)
        if text is None:
            return
        try:
            got = parse(text, now, handler)
        except ValueError as exc:
            log.info("cannot scrape %s: %s", url, exc)
            return
        before = self._last.get(key)
        self._last[key] = got
        if before is None:
            return
        point = interval(before, got, str(doc.get("client_id")))
        with self._lock:
            series = self._points.setdefault(str(doc.get("group")), deque())
            series.append(point)
            while series and series[0].t < now - KEEP_S:
                series.popleft()

    def scrape_errors(self) -> dict[str, str]:
        """Per ``--scrape`` target that failed its last look, why."""
        with self._lock:
            return dict(self.errors)

    def points(self, group: str, since: float = 0.0) -> list[Point]:
        with self._lock:
            return [p for p in self._points.get(group, ()) if p.t >= since]

    def of_group(self, group: str) -> list[dict[str, Any]]:
        with self._lock:
            return [d for d in self.statuses if d.get("group") == group]
