"""`lagless produce --from` and `lagless tail` on the real broker: the user's records go in
and come out byte for byte, counted exactly."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Message, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.admin import delete_topic
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import probe_conf, topic_ranges
from lagless.kafka.records import data_only
from lagless.kafka.tail import read_through
from tests.conftest import LAGLESS, Cluster, run_cli
from tests.integration.spark_helpers.raw_produce import produce_raw_headers

pytestmark = pytest.mark.integration

ALPHABET = 'abcxyz \t"\\{}é€😀\u0000'


def text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


def blob(rng: random.Random) -> dict[str, str]:
    raw = bytes([0xFF, *rng.randbytes(rng.randint(0, 12))])  # never valid UTF-8
    return {"base64": base64.b64encode(raw).decode()}


def user_records(count: int, partitions: int, seed: int = 7) -> list[dict[str, Any]]:
    """Keys, values and headers of every kind: text with quotes, tabs, NUL and emoji,
    binary, null; repeated header names; explicit partitions for a third of them."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rec: dict[str, Any] = {
            "key": None if i % 5 == 0 else (blob(rng) if i % 11 == 0 else f"k{i}-{text(rng, 6)}"),
            "value": None if i % 97 == 0 else (blob(rng) if i % 7 == 0 else text(rng, 40)),
            "headers": [["h", text(rng, 5)], ["h", None], ["bin", blob(rng)]][: i % 4],
        }
        if i % 3 == 0:
            rec["partition"] = i % partitions
        out.append(rec)
    return out


def start_cli(cluster: Cluster, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
    """``lagless ARGS`` in the background against ``cluster`` (stdin a pipe if asked)."""
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    return subprocess.Popen(
        [LAGLESS, *args], stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def canonical(rec: dict[str, Any]) -> str:
    return json.dumps({k: rec.get(k) for k in ("key", "value", "headers")}, sort_keys=True)


def tail_json(cluster: Cluster, topic: str, *args: str) -> list[dict[str, Any]]:
    proc = run_cli("tail", topic, "--json", *args, cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_produce_from_and_tail_round_trip_10000_records(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=3)
    records = user_records(10_000, 3)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    proc = run_cli("produce", "--topic", topic, "--from", str(path), "--json", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["produced"], doc["failed"], doc["lines"]) == (10_000, 0, 10_000)
    proc = run_cli("tail", topic, "--json", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    assert f"10000 records from {topic}" in proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(got) == 10_000
    assert Counter(canonical(r) for r in got) == Counter(canonical(r) for r in records)
    assert sum(r.records for r in topic_ranges(cluster.conf, topic)) == 10_000
    for p in range(3):  # records sent to a partition keep their order there (unique keys k<i>)
        sent = [r["key"] for r in records if r.get("partition") == p and isinstance(r["key"], str)]
        wanted = set(sent)
        came = [r["key"] for r in got if r["partition"] == p and str(r["key"]) in wanted]
        assert came == sent


def test_tab_lines_from_stdin_and_tail_formats(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    proc = run_cli("produce", "--topic", topic, "--from", "-", cluster=cluster,
                   stdin="k1\tv1\nk2\tv\t2\nnokey\n\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"produced 3 records to {topic} (0 failed) from 4 lines" in proc.stdout
    proc = run_cli("tail", topic, "--format", "{partition}:{offset} {key}={value}",
                   cluster=cluster)  # fmt: skip
    assert proc.stdout.splitlines() == ["0:0 k1=v1", "0:1 k2=v\\t2", "0:2 NULL=nokey"]
    # offsets, from the end, a count
    assert [r["offset"] for r in tail_json(cluster, topic, "--from", "1")] == [1, 2]
    assert [r["offset"] for r in tail_json(cluster, topic, "--from", "-1")] == [2]
    assert [r["offset"] for r in tail_json(cluster, topic, "--count", "2")] == [0, 1]
    assert tail_json(cluster, topic, "--from", "latest") == []
    proc = run_cli("tail", topic, "--format", "{nope}", cluster=cluster)
    assert proc.returncode == 2 and "'nope' is not a placeholder" in proc.stderr


def test_tail_partition_time_and_binary(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    first = [{"value": f"old{p}", "partition": p} for p in (0, 1)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    assert run_cli("produce", "--topic", topic, "--from", str(tmp_path / "a.jsonl"),
                   cluster=cluster).returncode == 0  # fmt: skip
    time.sleep(1.2)
    middle = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 0.2)) + "Z"
    time.sleep(1.0)
    second = [{"key": {"base64": "AP8="}, "value": "new\n1", "headers": [["h", "x"]],
               "partition": 1}]  # fmt: skip
    (tmp_path / "b.jsonl").write_text(json.dumps(second[0]) + "\n")
    assert run_cli("produce", "--topic", topic, "--from", str(tmp_path / "b.jsonl"),
                   cluster=cluster).returncode == 0  # fmt: skip
    assert [r["value"] for r in tail_json(cluster, topic, "--partition", "1")] == ["old1", "new\n1"]
    assert [r["value"] for r in tail_json(cluster, topic, "--from", middle)] == ["new\n1"]
    proc = run_cli("tail", topic, "-p", "1", "--from", "1", "--format",
                   "{key}|{value}|{headers}|{timestamp}", cluster=cluster)  # fmt: skip
    key, value, headers, stamp = proc.stdout.strip().split("|")
    assert (key, value, headers) == ("\\x00\\xff", "new\\n1", "h=x")  # shown safely, one line
    assert abs(int(stamp) / 1000 - time.time()) < 600  # produced in this test (a loaded machine)
    proc = run_cli("tail", topic, "--partition", "7", cluster=cluster)
    assert proc.returncode == 2 and "has no partition 7" in proc.stderr


def test_tail_follow_waits_for_new_records(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    follower = start_cli(cluster, "tail", topic, "--follow", "--from", "latest", "--count", "3")
    try:
        time.sleep(3)  # let it start and assign
        assert follower.poll() is None  # nothing yet: it waits
        proc = run_cli("produce", "--topic", topic, "--from", "-", cluster=cluster,
                       stdin="a\tx\nb\ty\nc\tz\n")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
    assert follower.returncode == 0, err
    assert sorted(out.splitlines()) == ["x", "y", "z"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_tail_follow_stopped_prints_what_it_printed_and_exits_0(
    cluster: Cluster, make_topic: Callable[..., str], sig: signal.Signals
) -> None:
    topic = make_topic(partitions=1)
    assert run_cli("produce", topic, "--from", "-", cluster=cluster,
                   stdin="a\tx\nb\ty\n").returncode == 0  # fmt: skip
    follower = start_cli(cluster, "tail", topic, "--follow")
    try:
        time.sleep(4)  # printed both, waiting for more
        assert follower.poll() is None
        follower.send_signal(sig)
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
    assert follower.returncode == 0, err
    assert out.splitlines() == ["x", "y"] and err.strip() == f"lagless: 2 records from {topic}"


def test_bad_line_stops_with_exit_2_and_keeps_what_came_before(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    lines = '{"value": "one"}\n{"value": "two"}\n{"vaule": "typo"}\n{"value": "four"}\n'
    proc = run_cli("produce", "--topic", topic, "--from", "-", cluster=cluster, stdin=lines)
    assert proc.returncode == 2
    assert "produced 2 records" in proc.stdout
    assert "stopped at line 3: unknown fields ['vaule']" in proc.stderr
    assert [r["value"] for r in tail_json(cluster, topic)] == ["one", "two"]
    proc = run_cli("produce", "--topic", topic, "--from", "-", "--count", "3", cluster=cluster)
    assert proc.returncode == 2 and "--count: workload options" in proc.stderr


def test_ctrl_c_flushes_and_prints_the_count(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    producer = start_cli(cluster, "produce", "--topic", topic, "--from", "-", stdin=True)
    assert producer.stdin is not None
    producer.stdin.write("".join(f"k{i}\tv{i}\n" for i in range(5)))
    producer.stdin.flush()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the 5 lines were read and sent; stdin is still open
        if sum(r.records for r in topic_ranges(cluster.conf, topic)) == 5:
            break
        time.sleep(0.3)
    producer.send_signal(signal.SIGINT)
    out, err = producer.communicate(timeout=30)
    assert producer.returncode == 130, err
    assert f"produced 5 records to {topic} (0 failed) from 5 lines" in out
    assert "interrupted" in err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_on_the_load_generator_prints_what_was_sent(
    cluster: Cluster, make_topic: Callable[..., str], sig: signal.Signals, code: int
) -> None:
    """SIGTERM (``kill`` of a generator started in the background) as Ctrl-C: flushed and
    counted, exit 128 + the signal's number."""
    topic = make_topic(partitions=1)
    producer = start_cli(
        cluster, "produce", "--topic", topic, "--rate", "50", "--duration", "60", "--json"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # some records are out
        if sum(r.records for r in topic_ranges(cluster.conf, topic)) >= 20:
            break
        time.sleep(0.3)
    producer.send_signal(sig)
    out, err = producer.communicate(timeout=30)
    assert producer.returncode == code, err
    assert ("terminated" if sig == signal.SIGTERM else "interrupted") in err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["failed"] == 0
    assert doc["produced"] == sum(r.records for r in topic_ranges(cluster.conf, topic)) >= 20


def test_a_second_ctrl_c_ends_the_wait_for_deliveries_once_the_broker_is_gone() -> None:
    """Ctrl-C flushes what was sent; with the broker gone that wait would last the flush
    timeout (120 s): a second Ctrl-C ends it, the undelivered counted as failed, exit 130."""
    from lagless.broker.mock import MockCluster

    mock = MockCluster()
    try:
        bootstrap = mock.start()
    except ClusterError as exc:
        pytest.skip(f"librdkafka's mock cluster cannot start here: {exc}")
    producer = subprocess.Popen(
        [LAGLESS, "-b", bootstrap, "produce", "gone", "--create", "--rate", "500",
         "--duration", "120", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(4)  # started, records delivered
        mock.stop()  # the broker is gone: what is sent from now on is never delivered
        time.sleep(2)
        producer.send_signal(signal.SIGINT)  # flush ...
        time.sleep(2)
        assert producer.poll() is None, "the wait for deliveries did not wait"
        producer.send_signal(signal.SIGINT)  # ... no longer
        begun = time.monotonic()
        out, err = producer.communicate(timeout=30)
    finally:
        producer.kill()
        mock.stop()
    assert time.monotonic() - begun < 10, "the second Ctrl-C did not end the wait"
    assert producer.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["produced"] > 0 and doc["failed"] > 0
    assert "undelivered when stopped at once" in doc["first_error"]


def test_a_missing_partition_stops_at_its_line_and_keeps_what_came_before(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """20,000 records for partition 0, then one for partition 1 of a 1-partition topic: the
    20,000 are flushed, delivered and counted, the run stops there with one line, exit 1."""
    topic = make_topic(partitions=1)
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"value": f"v{i}", "partition": 0}) for i in range(20_000)]
    lines += [json.dumps({"value": "late", "partition": p}) for p in (1, 0)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for source, stdin in ((str(path), None), ("-", path.read_text(encoding="utf-8"))):
        proc = run_cli("produce", topic, "--from", source, cluster=cluster, stdin=stdin)
        assert proc.returncode == 1, proc.stderr
        assert f"produced 20000 records to {topic} (0 failed)" in proc.stdout
        assert proc.stderr.strip().splitlines() == [
            f"lagless: stopped at line 20001: partition 1 of {topic} does not exist "
            "(the topic has 1); nothing after it was sent"
        ]
    got = [r["value"] for r in tail_json(cluster, topic)]
    assert got == [f"v{i}" for i in range(20_000)] * 2


def test_ctrl_c_while_stdin_stays_open_exits_130_with_the_count(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """``(printf 'a\\tb\\n'; sleep 60) | lagless produce T --from -`` then Ctrl-C: the writer
    keeps the pipe open, yet the exit is clean (no reader thread left blocked on stdin)."""
    topic = make_topic(partitions=1)
    read_end, write_end = os.pipe()
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    producer = subprocess.Popen(
        [LAGLESS, "produce", topic, "--from", "-"], stdin=read_end,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    os.close(read_end)
    try:
        os.write(write_end, b"a\tb\nc\td\n")
        deadline = time.monotonic() + 60
        while sum(r.records for r in topic_ranges(cluster.conf, topic)) < 2:
            assert time.monotonic() < deadline, "the 2 lines never arrived"
            time.sleep(0.3)
        producer.send_signal(signal.SIGINT)
        out, err = producer.communicate(timeout=30)
    finally:
        producer.kill()
        os.close(write_end)
    assert producer.returncode == 130, err
    assert f"produced 2 records to {topic} (0 failed) from 2 lines" in out
    assert "Fatal" not in err and "interrupted" in err
    assert [r["value"] for r in tail_json(cluster, topic)] == ["b", "d"]


def test_from_a_named_pipe_and_a_directory(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """``--from <(printf ...)`` or a FIFO reads like a file; a directory says so."""
    topic = make_topic(partitions=1)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf 'p\\tq\\n' > {fifo}"])
    proc = run_cli("produce", topic, "--from", str(fifo), cluster=cluster)
    writer.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert f"produced 1 records to {topic}" in proc.stdout
    proc = run_cli("produce", topic, "--from", str(tmp_path), cluster=cluster)
    assert proc.returncode == 2
    assert proc.stderr == f"lagless: error: --from {tmp_path}: is a directory\n"


def test_a_bounded_read_of_a_topic_deleted_meanwhile_stops_with_one_line(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """A bounded read fetching a topic that was deleted would wait forever for its end; after
    a quiet spell it checks where it stands: read to the end, or the topic gone."""
    topic = make_topic(1)
    cluster.produce(topic, [b"a", b"b", b"c"])
    consumer = make_consumer(probe_conf(cluster.conf))
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[Message] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            got.extend(data_only(consumer.consume(10, timeout=0.5)))
        assert len(got) == 3
        key = (topic, 0)
        assert read_through(consumer, {key}, {key: 3}, topic) == {key}  # at its end
        assert read_through(consumer, {key}, {key: 4}, topic) == set()  # one more to come
        consumer.pause([TopicPartition(topic, 0)])  # Tansu 0.6 crashes a fetch of a deleted topic
        time.sleep(1.0)  # the fetch in flight answered
        delete_topic(cluster.conf, topic, 15.0)
        with pytest.raises(ClusterError, match=f"cannot read '{topic}': it was deleted"):
            poll_until_gone(lambda: read_through(consumer, {key}, {key: 4}, topic))
    finally:
        consumer.close()


def poll_until_gone(check: Callable[[], object], timeout: float = 30.0) -> None:
    """Call ``check`` until it raises (metadata may show a deleted topic for a moment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check()
        time.sleep(0.5)


def test_tail_stops_at_a_header_name_that_is_not_utf8_in_one_line_with_its_coordinates(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """confluent-kafka cannot read such a header name: the records before it are printed, then
    one line naming the record (no traceback), exit 1."""
    topic = make_topic(partitions=1)
    produce_raw_headers(cluster.bootstrap, topic, [[(b"ok", b"x")], [(b"\xed\xa0\x80", b"x")]])
    proc = run_cli("tail", topic, "--format", "{offset} {headers}", cluster=cluster)
    assert proc.returncode == 1, proc
    assert proc.stdout == "0 ok=x\n"
    assert proc.stderr.strip().splitlines() == [
        "lagless: error: a header name is not UTF-8 (confluent-kafka cannot read its headers) "
        f"({topic}[0]@1)"
    ]
