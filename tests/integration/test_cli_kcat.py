"""`tail` and `produce` as kcat users type them, through the installed entry point against the
real broker: -f FORMAT with kcat's placeholders, NULL apart from empty, -K:, plain JSON lines
(the README's payments, consumed by the README's App), bytes that are not UTF-8, a missing
topic; `topic describe` with leaders, replicas, ISR and configs."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import LAGLESS, Cluster, run_cli, unique
from tests.integration.engine_helpers import GROUP_FLAGS

pytestmark = pytest.mark.integration


def test_tail_kcat_format_and_null_apart_from_empty(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    proc = run_cli("produce", topic, "--from", "-", cluster=cluster,
                   stdin="k\tv\n\tempty key\nno key\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fmt = "%t [%p] @%o: key(%K)=%k value(%S)=%s 100%%\\n"
    proc = run_cli("tail", topic, "-f", fmt, cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{topic} [0] @0: key(1)=k value(1)=v 100%",
        f"{topic} [0] @1: key(0)= value(9)=empty key 100%",
        f"{topic} [0] @2: key(-1)=NULL value(6)=no key 100%",
    ]
    stamped = run_cli("tail", topic, "-c", "1", "-f", "%T|%h\\n", cluster=cluster)
    stamp, headers = stamped.stdout.strip().split("|")
    assert int(stamp) > 1_700_000_000_000 and headers == ""
    bad = run_cli("tail", topic, "-f", "%k %Z", cluster=cluster)
    assert bad.returncode == 2 and "%Z is not a kcat placeholder" in bad.stderr
    follow_short = run_cli("tail", topic, "-f", cluster=cluster)  # -f is no longer --follow
    assert follow_short.returncode == 2


def test_topic_describe_shows_leaders_replicas_isr_and_configs(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    doc = json.loads(run_cli("topic", "describe", topic, "--json", cluster=cluster).stdout)
    assert [p["partition"] for p in doc["partitions"]] == [0, 1]
    for part in doc["partitions"]:
        assert part["leader"] >= 0 and part["leader"] in part["replicas"]
        assert part["isr"] == part["replicas"]
    assert doc["configs"] is None or isinstance(doc["configs"], dict)
    text = run_cli("topic", "describe", topic, cluster=cluster)
    assert text.stdout.splitlines()[0].split() == [
        "PARTITION", "LEADER", "REPLICAS", "ISR", "START", "END", "RECORDS"
    ]  # fmt: skip
    assert f"topic {topic}: 2 partitions, configs: " in text.stderr


def test_produce_one_record_with_a_key_delimiter(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    proc = run_cli("produce", topic, "-K:", cluster=cluster, stdin='order-1:{"a": 1}\n')
    assert proc.returncode == 0, proc.stderr
    assert f"produced 1 records to {topic}" in proc.stdout
    got = [json.loads(line) for line in run_cli("tail", topic, "--json",
                                                 cluster=cluster).stdout.splitlines()]  # fmt: skip
    assert [(r["key"], r["value"]) for r in got] == [("order-1", '{"a": 1}')]


def test_bytes_that_are_not_utf8_reach_the_record_as_they_were(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.run(
        [LAGLESS, "produce", topic, "--from", "-"], input=b"\xff\xfek\tv\xc3(\nplain\n",
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    got = [json.loads(line) for line in run_cli("tail", topic, "--json",
                                                 cluster=cluster).stdout.splitlines()]  # fmt: skip
    assert got[0]["key"] == {"base64": "//5r"} and got[0]["value"] == {"base64": "dsMo"}
    assert got[1]["value"] == "plain"


def test_a_missing_topic_asks_for_create(cluster: Cluster) -> None:
    topic = unique("missing")
    proc = run_cli("produce", topic, "--from", "-", cluster=cluster, stdin="a\n")
    assert proc.returncode == 2
    assert f"topic '{topic}' does not exist: add --create" in proc.stderr
    listed = run_cli("topic", "list", "--json", cluster=cluster).stdout
    assert topic not in {t["topic"] for t in json.loads(listed)["topics"]}
    proc = run_cli("produce", topic, "--from", "-", "--create", "--partitions", "2",
                   cluster=cluster, stdin="a\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"topic {topic} created with 2 partitions" in proc.stderr
    doc = json.loads(run_cli("topic", "describe", topic, "--json", cluster=cluster).stdout)
    assert (len(doc["partitions"]), doc["records"]) == (2, 1)


README_APP = """
from pydantic import BaseModel

import lagless


class Payment(BaseModel):
    payment_id: str
    amount: float


app = lagless.App(group="big-payments")


@app.handler("payments", ordering="key", max_in_flight=500, dlq="payments-dlq",
             value=Payment, output="payments-big")
def big(payment: Payment) -> Payment | None:
    return payment if payment.amount > 100 else None
"""


def test_plain_json_payments_are_consumed_by_the_readme_app(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """The README's App (its topics renamed, to share the test broker) reads the payments a
    plain-JSON ``produce --from`` sent: one Payment per line, no record envelope."""
    source, dlq, out = make_topic(3), make_topic(1), make_topic(3)
    code = README_APP.replace('"payments-dlq"', repr(dlq)).replace('"payments-big"', repr(out))
    code = code.replace('"payments"', repr(source)).replace("big-payments", unique("g"))
    (tmp_path / "service.py").write_text(code)
    payments = [{"payment_id": f"p{i}", "amount": 50.0 + 40 * i} for i in range(5)]
    (tmp_path / "payments.jsonl").write_text("".join(json.dumps(p) + "\n" for p in payments))
    proc = run_cli("produce", source, "--from", str(tmp_path / "payments.jsonl"), cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    assert f"produced 5 records to {source} (0 failed)" in proc.stdout
    run = run_cli("run", "service:app", "--until-idle", "2", "--json", "--record", "rec",
                  *GROUP_FLAGS, cluster=cluster, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)["big"]
    assert (summary["processed"], summary["dlq"]) == (5, 0)
    # what it does, said at default verbosity
    assert f"lagless: running service:app on {cluster.bootstrap} (PLAINTEXT)" in run.stderr
    assert f"lagless: handler big: {source} in group " in run.stderr
    assert f"outputs to {out}, dead letters to {dlq}, ordering key" in run.stderr
    assert "lagless: handler big joined its group: 3 partitions" in run.stderr
    # --record: the run sampled for the HTML report, as consume --record does
    assert "lagless: run recorded in rec: lagless report rec" in run.stderr
    assert json.loads((tmp_path / "rec" / "run.json").read_text())["handler"] == "big"
    assert (tmp_path / "rec" / "timeline.jsonl").read_text().strip()
    report = run_cli("report", "rec", cwd=tmp_path)
    assert report.returncode == 0 and (tmp_path / "rec" / "report.html").is_file()
    big = [json.loads(line)["value"] for line in run_cli(
        "tail", out, "--json", cluster=cluster).stdout.splitlines()]  # fmt: skip
    assert sorted(json.loads(v)["payment_id"] for v in big) == ["p2", "p3", "p4"]
