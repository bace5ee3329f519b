"""The sampler's ``/metrics``: every group's lag as kafka-lag-exporter and Burrow serve it.

Names from :mod:`lagless.observe.figures`; the values are the sampler's latest cycle, so lag
alerts do not depend on the consumers being alive to report it. While the cluster is
unreachable ``lagless_cluster_up`` is 0 and the group series are not served (no stale figure
is exported as if current).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lagless.observe import figures
from lagless.ui.model import Snapshot

TotalFn = Callable[[str], int]


class SamplerCollector(Collector):
    """Collects the latest snapshot (``latest()``) and the rebalance counts (``rebalances``)."""

    def __init__(self, latest: Callable[[], Snapshot], rebalances: TotalFn) -> None:
        self.latest = latest
        self.rebalances = rebalances

    def collect(self) -> Iterator[Metric]:
        snap = self.latest()
        up = GaugeMetricFamily(figures.CLUSTER_UP, "1 when the last cycle reached the cluster")
        up.add_metric([], 1.0 if snap.up else 0.0)
        yield up
        cycle = GaugeMetricFamily(figures.SAMPLER_CYCLE_SECONDS, "duration of the last cycle")
        cycle.add_metric([], snap.cycle_s)
        yield cycle
        if not snap.up:
            return
        tp = ["group", "topic", "partition"]
        lag = GaugeMetricFamily(figures.GROUP_LAG_RECORDS, "committed lag in records", labels=tp)
        secs = GaugeMetricFamily(figures.GROUP_LAG_SECONDS, "lag in seconds", labels=tp)
        members = GaugeMetricFamily(figures.GROUP_MEMBERS, "members", labels=["group"])
        state = GaugeMetricFamily(figures.GROUP_STATE, "group state", labels=["group", "state"])
        rebalances = CounterMetricFamily(
            figures.GROUP_REBALANCES.removesuffix("_total"), "rebalances seen", labels=["group"]
        )
        for g in snap.groups:
            for p in g.partitions:
                labels = [g.group, p.topic, str(p.partition)]
                lag.add_metric(labels, float(p.lag))
                if p.lag_s is not None:
                    secs.add_metric(labels, p.lag_s)
            members.add_metric([g.group], float(g.members))
            state.add_metric([g.group, g.state], 1.0)
            rebalances.add_metric([g.group], float(self.rebalances(g.group)))
        ends = GaugeMetricFamily(
            figures.TOPIC_END_OFFSET, "log end offset", labels=["topic", "partition"]
        )
        for t in snap.topics:
            for partition, end in enumerate(t.ends):
                ends.add_metric([t.topic, str(partition)], float(end))
        yield from (lag, secs, members, state, rebalances, ends)


def registry(collector: SamplerCollector) -> CollectorRegistry:
    out = CollectorRegistry(auto_describe=False)
    out.register(collector)
    return out
