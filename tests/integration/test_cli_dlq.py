"""`lagless dlq list|replay` through the installed entry point against the real broker: 1,000
records dead-lettered by a failing App, counted by kind, replayed to their source topic with
their original key, value and headers, and consumed again exactly once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cluster, run_cli, unique
from tests.integration.engine_helpers import GROUP_FLAGS

pytestmark = pytest.mark.integration

FAILING = """import lagless

app = lagless.App(group=GROUP)


@app.handler(SOURCE, dlq=DLQ, retries=0, max_in_flight=200)
def handle(value: bytes) -> None:
    if value.startswith(b"v"):
        raise ValueError("refused")
    raise KeyError("missing")
"""


def test_dead_letters_listed_replayed_and_consumed_again_exactly_once(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    source, dlq = make_topic(3), make_topic(2)
    group = unique("g")
    code = FAILING.replace("GROUP", repr(group)).replace("SOURCE", repr(source))
    (tmp_path / "failing.py").write_text(code.replace("DLQ", repr(dlq)))
    lines = [
        json.dumps({"key": f"k{i}", "value": f"{'v' if i % 4 else 'w'}{i}",
                    "headers": [["trace-id", f"t{i}"]]})
        for i in range(1000)
    ]  # fmt: skip
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    assert run_cli("produce", source, "--from", str(tmp_path / "in.jsonl"),
                   cluster=cluster).returncode == 0  # fmt: skip
    run = run_cli("run", "failing:app", "--until-idle", "2", "--json", *GROUP_FLAGS,
                  cluster=cluster, cwd=tmp_path, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["handle"]["dlq"] == 1000

    listed = json.loads(run_cli("dlq", "list", dlq, "--json", cluster=cluster).stdout)
    assert listed["records"] == 1000
    assert {(k["error_class"], k["source_topic"]): k["records"] for k in listed["kinds"]} == {
        ("ValueError", source): 750, ("KeyError", source): 250
    }  # fmt: skip
    text = run_cli("dlq", "list", dlq, cluster=cluster).stdout.splitlines()
    assert [line.split() for line in text] == [
        ["ERROR-CLASS", "SOURCE-TOPIC", "RECORDS"], ["ValueError", source, "750"],
        ["KeyError", source, "250"],
    ]  # fmt: skip

    replayed = run_cli("dlq", "replay", dlq, "--json", cluster=cluster, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    doc = json.loads(replayed.stdout)
    assert (doc["chosen"], doc["produced"], doc["failed"], doc["to"]) == (
        1000, 1000, 0, {source: 1000}
    )  # fmt: skip
    # the replayed records: original key, value and headers, a replay header, once each
    tailed = run_cli("tail", source, "--json", cluster=cluster).stdout.splitlines()
    again = [r for r in map(json.loads, tailed) if r["offset"] >= 0 and any(
        h[0] == "lagless-replayed-from" for h in r["headers"])]  # fmt: skip
    assert len(again) == 1000
    assert Counter(r["value"] for r in again) == Counter(
        f"{'v' if i % 4 else 'w'}{i}" for i in range(1000)
    )
    for record in again:
        i = int(record["value"][1:])
        assert record["key"] == f"k{i}"
        assert record["headers"][0] == ["trace-id", f"t{i}"]
        assert not [h for h in record["headers"] if h[0].startswith("lagless-dlq-")]
        assert record["headers"][1][1].startswith(f"{dlq}:")
    # consumed again by the same group: exactly the 1,000 replayed records, once
    consumed = run_cli("consume", source, "--group", group, "--handler", "noop",
                       "--on-failure", "stop", "--until-idle", "2", "--json", *GROUP_FLAGS,
                       cluster=cluster, timeout=300)  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert json.loads(consumed.stdout)["processed"] == 1000

    only = run_cli("dlq", "replay", dlq, "--error-class", "KeyError", "--to", dlq + "-nope",
                   cluster=cluster)  # fmt: skip
    assert only.returncode == 2 and "does not exist" in only.stderr
