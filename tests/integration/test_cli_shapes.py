"""The command line as kcat and kafka-consumer-groups users type it, through the installed
entry point against the real broker: global options anywhere (-b, -X), one shape per command
(positional or its --topic/--group alias), kafka-consumer-groups' spellings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from lagless.kafka.admin import alter_committed_offsets
from tests.conftest import Cluster, run_cli, unique

pytestmark = pytest.mark.integration


def committed(cluster: Cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's commits, read by a plain confluent-kafka consumer (not lagless's admin)."""
    consumer = Consumer({**cluster.conf, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def fill(cluster: Cluster, topic: str, lines: str) -> None:
    proc = run_cli("produce", topic, "--from", "-", cluster=cluster, stdin=lines)
    assert proc.returncode == 0, proc.stderr


def test_global_options_anywhere_and_x_reaches_every_client(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    fill(cluster, topic, "k1\tv1\nk2\tv2\n")
    # -b after the sub-command and after its own options (no LAGLESS_BOOTSTRAP set)
    proc = run_cli("tail", topic, "--format", "{value}", "-b", cluster.bootstrap)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["v1", "v2"]
    proc = run_cli("tail", topic, f"--bootstrap={cluster.bootstrap}", "-c", "1")
    assert proc.stdout.splitlines() == ["v1"], proc.stderr
    # -X overrides a property of every client the command makes: a dead -b is replaced by
    # the real address for the reachability check, the offset probe and the reader alike
    proc = run_cli(
        "tail", topic, "-b", "127.0.0.1:1", "-X", f"bootstrap.servers={cluster.bootstrap}"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["v1", "v2"]
    bad = run_cli("topic", "list", "-X", "no.such.property=1", cluster=cluster)
    assert bad.returncode == 2
    assert bad.stderr == (
        "lagless: error: librdkafka configuration: No such configuration property: "
        '"no.such.property"\n'
    )
    bad = run_cli("topic", "list", "-X", "fetch.wait.max.ms", cluster=cluster)
    assert bad.returncode == 2 and "give a librdkafka property as key=value" in bad.stderr


def test_version_and_completion_options() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("lagless 0.") and "librdkafka 2." in proc.stdout
    helped = run_cli("--help")
    assert "--install-completion" in helped.stdout and "-X KEY=VALUE" in helped.stdout
    stop = run_cli("broker", "stop", "--help")
    assert "keeps its state directory" in " ".join(stop.stdout.split())


def test_positional_or_alias_one_shape(cluster: Cluster, make_topic: Callable[..., str]) -> None:
    topic = make_topic(partitions=1)
    fill(cluster, topic, "a\n")
    proc = run_cli("produce", "--topic", topic, "--from", "-", cluster=cluster, stdin="b\n")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("tail", "--topic", topic, cluster=cluster)
    assert proc.stdout.splitlines() == ["a", "b"]
    both = run_cli("tail", topic, "--topic", "other", cluster=cluster)
    assert both.returncode == 2 and "two topics given" in both.stderr
    none = run_cli("tail", cluster=cluster)
    assert none.returncode == 2 and "give the topic" in none.stderr
    described = run_cli("topic", "describe", "--topic", topic, "--json", cluster=cluster)
    assert json.loads(described.stdout)["records"] == 2
    other = unique("t")
    made = run_cli("topic", "create", "--topic", other, "--partitions", "2", "--json",
                   cluster=cluster)  # fmt: skip
    assert json.loads(made.stdout) == {"topic": other, "created": True}
    gone = run_cli("topic", "delete", other, "--yes", "--json", cluster=cluster)
    assert json.loads(gone.stdout) == {"deleted": [other]}


def test_kafka_consumer_groups_spellings(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    first, second = make_topic(partitions=2), make_topic(partitions=1)
    fill(cluster, first, "".join(f"k{i}\tv{i}\n" for i in range(10)))
    fill(cluster, second, "x\ny\nz\n")
    group = unique("g<spelt>")  # listed percent-encoded by the embedded broker
    alter_committed_offsets(cluster.conf, group, {(first, 0): 1, (first, 1): 1, (second, 0): 2})

    listed = json.loads(run_cli("group", "list", "--json", cluster=cluster).stdout)["groups"]
    assert group in {g["group"] for g in listed}  # the real id, not g%3Cspelt%3E-…
    doc = json.loads(run_cli("group", "describe", "--group", group, "--json",
                             cluster=cluster).stdout)  # fmt: skip
    assert {(p["topic"], p["partition"]): p["current_offset"] for p in doc["partitions"]} == {
        (first, 0): 1, (first, 1): 1, (second, 0): 2
    }  # fmt: skip
    every = json.loads(run_cli("group", "describe", "--all-groups", "--json",
                               cluster=cluster).stdout)  # fmt: skip
    assert group in {d["group"] for d in every["groups"]}

    # a partition selector, exported as CSV, changes nothing
    export = run_cli("group", "reset-offsets", "--group", group, "--topic", f"{first}:1",
                     "--to-earliest", "--export", cluster=cluster)  # fmt: skip
    assert export.returncode == 0, export.stderr
    assert export.stdout == f"{first},1,0\n"
    assert committed(cluster, group, first, 2) == {0: 1, 1: 1}
    # the exported file, edited, is executed as given
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{first},0,0\n{second},0,3\n")
    done = run_cli("group", "reset-offsets", group, "--from-file", str(plan), "--execute",
                   cluster=cluster)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert committed(cluster, group, first, 2) == {0: 0, 1: 1}
    assert committed(cluster, group, second, 1) == {0: 3}
    # --all-topics --to-current: the commits stay; the columns stay clean for awk
    current = run_cli("group", "reset-offsets", group, "--all-topics", "--to-current",
                      cluster=cluster)  # fmt: skip
    rows = [line.split() for line in current.stdout.splitlines()]
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"]
    assert sorted(r[1:] for r in rows[1:]) == sorted(
        [[first, "0", "0", "0"], [first, "1", "1", "1"], [second, "0", "3", "3"]]
    )
    bad = run_cli("group", "reset-offsets", group, "--topic", f"{first}:9", "--to-earliest",
                  cluster=cluster)  # fmt: skip
    assert bad.returncode == 2 and "has no partition 9" in bad.stderr


def test_deleting_an_unknown_group_is_an_error(cluster: Cluster) -> None:
    proc = run_cli("group", "delete", unique("never-seen"), cluster=cluster)
    assert proc.returncode == 1
    assert "on this cluster: nothing deleted" in proc.stderr and "deleted\n" not in proc.stdout


def test_sasl_against_the_plaintext_listener_says_mismatch(
    cluster: Cluster, tmp_path: Path
) -> None:
    if not cluster.embedded:
        pytest.skip("needs a PLAINTEXT listener: the embedded broker's")
    settings = tmp_path / "sasl.toml"
    settings.write_text(
        f'[kafka]\nbootstrap = "{cluster.bootstrap}"\nsecurity_protocol = "SASL_PLAINTEXT"\n'
        'sasl_mechanism = "SCRAM-SHA-256"\nsasl_username = "u"\nsasl_password = "p"\n'
    )
    proc = run_cli("--config", str(settings), "topic", "list")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"lagless: error: authentication/protocol mismatch at {cluster.bootstrap}: the "
        "listener accepts connections but no Kafka answer came with security.protocol "
        "SASL_PLAINTEXT, sasl.mechanism SCRAM-SHA-256"
    )
    assert proc.stderr.count("\n") == 1
    typo = tmp_path / "typo.toml"
    typo.write_text(f'bootstrap = "{cluster.bootstrap}"\nclient_idd = "x"\n')
    proc = run_cli("topic", "list", "--config", str(typo))
    assert proc.returncode == 2
    assert "'client_idd' is not a setting (did you mean client_id?)" in proc.stderr
