"""The one definition of each figure lagless shows in more than one place.

A number means what its label says: the CLI (``lagless lag``, ``lagless group describe``), the
engine's metrics, the console (``lagless ui``) and its sampler, the run report and the
rebalance lab all name these figures with the words and metric names below, and nothing else.
docs/observability.md carries the same table (``FIGURES``); a unit test keeps them in step.

Figures
-------
committed lag (records)
    log end offset - the group's committed offset, per partition: what the broker shows, what
    a restart resumes from (``lagless lag``, the console's sampler, the lab's
    ``max_lag_records``). Computed by :mod:`lagless.observe.lag`.
lag in seconds
    :func:`lagless.observe.lagtime.lag_seconds`: now - the timestamp of the record at the
    committed offset; 0 when caught up.
unfinished lag (records)
    high watermark - the engine's first unfinished offset (what its next commit stores),
    measured inside an instance.
position lag (records)
    log end - the consumer's position (the offset its next poll returns), as Kafka's
    ``records-lag``; measured inside an instance.
rebalance
    one change of a group's assignment (or generation), counted once per group, not once per
    callback per instance.
rebalance time
    the disruption: from the first revoke (or a member leaving or joining) until every
    partition of the group is owned and consuming again (the lab's ``rebalance_s``).
rebalance callback time
    the duration of one instance's rebalance callback, from its start to work resuming.
rebalance callbacks
    an instance's own assign / revoke / lost callbacks (not rebalances: one rebalance calls
    one or more callbacks in every member).
"""

from __future__ import annotations

from dataclasses import dataclass

# Words: the one label of each figure, as pages, tables and docs print it.
COMMITTED_LAG = "committed lag"
LAG_SECONDS = "lag in seconds"
UNFINISHED_LAG = "unfinished lag"
POSITION_LAG = "position lag"
REBALANCE = "rebalance"
REBALANCE_TIME = "rebalance time"
REBALANCE_CALLBACK_TIME = "rebalance callback time"
REBALANCE_CALLBACKS = "rebalance callbacks"

# The console's sampler (``lagless ui``): the cluster as seen from outside, every group.
GROUP_LAG_RECORDS = "lagless_group_lag_records"
GROUP_LAG_SECONDS = "lagless_group_lag_seconds"
GROUP_REBALANCES = "lagless_group_rebalances_total"
GROUP_MEMBERS = "lagless_group_members"
GROUP_STATE = "lagless_group_state"
TOPIC_END_OFFSET = "lagless_topic_end_offset"
CLUSTER_UP = "lagless_cluster_up"
SAMPLER_CYCLE_SECONDS = "lagless_sampler_cycle_seconds"

# An engine instance's own gauges and counters (lagless.observe.metrics), as scraped.
ENGINE_LAG_RECORDS = "lagless_lag_records"
ENGINE_LAG_SECONDS = "lagless_lag_seconds"
ENGINE_POSITION_LAG = "lagless_position_lag_records"
ENGINE_REBALANCE_CALLBACKS = "lagless_rebalances_total"
ENGINE_REBALANCE_CALLBACK_SECONDS = "lagless_rebalance_callback_seconds"


@dataclass(frozen=True)
class Figure:
    """One figure: its label, where it is measured, its metric and labels, what it means."""

    label: str
    unit: str
    source: str
    metric: str
    labels: str
    meaning: str


FIGURES: tuple[Figure, ...] = (
    Figure(
        COMMITTED_LAG, "records", "console sampler, `lagless lag`, lab `max_lag_records`",
        GROUP_LAG_RECORDS, "group, topic, partition",
        "log end offset - the group's committed offset (what a restart resumes from)",
    ),
    Figure(
        LAG_SECONDS, "seconds", "console sampler, `lagless lag`",
        GROUP_LAG_SECONDS, "group, topic, partition",
        "now - timestamp of the record at the committed offset; 0 when caught up "
        "(`lagless.observe.lagtime.lag_seconds`)",
    ),
    Figure(
        LAG_SECONDS, "seconds", "engine instance",
        ENGINE_LAG_SECONDS, "group, topic, partition",
        "the same definition, from the engine's first unfinished record",
    ),
    Figure(
        UNFINISHED_LAG, "records", "engine instance",
        ENGINE_LAG_RECORDS, "group, topic, partition",
        "high watermark - the engine's first unfinished offset (what its next commit stores)",
    ),
    Figure(
        POSITION_LAG, "records", "engine instance; lab `max_position_lag_records`",
        ENGINE_POSITION_LAG, "group, topic, partition",
        "log end - the consumer's position (the offset its next poll returns), "
        "as Kafka's `records-lag`",
    ),
    Figure(
        REBALANCE, "events", "console sampler",
        GROUP_REBALANCES, "group",
        "changes of the group's assignment or generation the sampler saw, once per group",
    ),
    Figure(
        REBALANCE_CALLBACKS, "events", "engine instance",
        ENGINE_REBALANCE_CALLBACKS, "group, kind",
        "this instance's rebalance callbacks: `assign`, `revoke`, `lost`",
    ),
    Figure(
        REBALANCE_TIME, "seconds", "console rebalance log, lab `rebalance_s`",
        "", "",
        "from the first revoke (or a member leaving or joining) until every partition of the "
        "group is owned and consuming again",
    ),
    Figure(
        REBALANCE_CALLBACK_TIME, "seconds", "engine instance, run report",
        ENGINE_REBALANCE_CALLBACK_SECONDS, "group",
        "one rebalance callback, from its start to work resuming (a histogram)",
    ),
    Figure(
        "group members", "members", "console sampler",
        GROUP_MEMBERS, "group",
        "members the broker reports, else the live lagless instances that own the group's "
        "partitions",
    ),
    Figure(
        "group state", "1", "console sampler",
        GROUP_STATE, "group, state",
        "1 for the group's current state (Stable, Empty, PreparingRebalance, …)",
    ),
    Figure(
        "topic end offset", "offset", "console sampler",
        TOPIC_END_OFFSET, "topic, partition",
        "the partition's log end offset (fetch high watermark); its rise is the input rate",
    ),
    Figure(
        "cluster up", "1/0", "console sampler",
        CLUSTER_UP, "",
        "1 when the sampler's last cycle reached the cluster, else 0",
    ),
    Figure(
        "sampler cycle", "seconds", "console sampler",
        SAMPLER_CYCLE_SECONDS, "",
        "how long the sampler's last read of the whole cluster took",
    ),
)  # fmt: skip


def markdown_table() -> str:
    """``FIGURES`` as the Markdown table docs/observability.md carries."""
    lines = [
        "| figure | unit | measured by | metric | labels | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for f in FIGURES:
        metric = f"`{f.metric}`" if f.metric else "—"
        lines.append(
            f"| {f.label} | {f.unit} | {f.source} | {metric} | {f.labels or '—'} | {f.meaning} |"
        )
    return "\n".join(lines)
