"""`lagless topic list|delete` on the real broker."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from lagless.kafka.admin import list_topics
from tests.conftest import Cluster, run_cli

pytestmark = pytest.mark.integration


def test_list_then_delete_with_confirmation(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    first, second = make_topic(partitions=2), make_topic(partitions=3)
    proc = run_cli("topic", "list", "--json", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    listed = {t["topic"]: t["partitions"] for t in json.loads(proc.stdout)["topics"]}
    assert (listed[first], listed[second]) == (2, 3)
    assert not [t for t in listed if t.startswith("__")]  # internal topics only on request
    text = run_cli("topic", "list", cluster=cluster).stdout.splitlines()
    assert text[0].split() == ["TOPIC", "PARTITIONS"] and f"{first} 2" in " ".join(
        " ".join(line.split()) for line in text
    )
    refused = run_cli("topic", "delete", first, second, cluster=cluster)  # no terminal, no --yes
    assert refused.returncode == 2 and "confirm with --yes" in refused.stderr
    assert first in dict(list_topics(cluster.conf))
    done = run_cli("topic", "delete", first, second, "--yes", cluster=cluster)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"topic {first} deleted", f"topic {second} deleted"]
    left = dict(list_topics(cluster.conf))
    assert first not in left and second not in left
    missing = run_cli("topic", "delete", first, "--yes", cluster=cluster)
    assert missing.returncode == 1 and first in missing.stderr


def test_consuming_a_missing_topic_is_the_error_alone(cluster: Cluster) -> None:
    """No "processed 0 records" summary before the one line: nothing ran."""
    proc = run_cli("consume", "no-such-topic-here", "--group", "g-missing", "--handler", "noop",
                   "--on-failure", "skip", cluster=cluster, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "lagless: error: topic 'no-such-topic-here' does not exist "
        "(create it: lagless topic create no-such-topic-here)\n"
    )
