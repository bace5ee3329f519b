"""The console's /metrics scraped by a real Prometheus: every group's committed lag, as the API
shows it, queryable by group, topic and partition."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from lagless.broker.embedded import free_port
from lagless.kafka.admin import alter_committed_offsets
from tests.conftest import Cluster
from tests.integration.ui_helpers import api, console, poll, request

pytestmark = pytest.mark.integration


def query(port: int, promql: str) -> list[dict[str, Any]]:
    """The query's result; empty while Prometheus is not answering yet (a loaded machine)."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        status, doc, _ = request(url)
    except urllib.error.URLError:
        return []
    assert status == 200, doc
    result: list[dict[str, Any]] = doc["data"]["result"]
    return result


def test_prometheus_scrapes_every_groups_lag(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (make test installs it where it can)")
    topic = make_topic(2)
    producer = Producer(cluster.conf)
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 2, (topic, 1): 5})
    with console(tmp_path / "home", cluster.bootstrap, tmp_path) as (base, _ui):
        target = urllib.parse.urlsplit(base).netloc
        port = free_port()
        config = tmp_path / "prometheus.yml"
        job = {"job_name": "lagless-ui", "static_configs": [{"targets": [target]}]}
        config.write_text(json.dumps({"global": {"scrape_interval": "1s"},
                                      "scrape_configs": [job]}))  # fmt: skip
        prom = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb"),
        )  # fmt: skip
        try:
            doc = poll(lambda: (r := request(base.rstrip("/") + "/api/groups/" + group))[0] == 200
                       and r[1], 30, "the group in the API")  # fmt: skip
            expected = {str(p["partition"]): float(p["lag"]) for p in doc["partitions"]}
            assert expected == {"0": 3.0, "1": 0.0}
            promql = f'lagless_group_lag_records{{group="{group}",topic="{topic}"}}'
            found = poll(lambda: len(query(port, promql)) == 2 and query(port, promql), 60,
                         "Prometheus has the group's lag")  # fmt: skip
            got = {str(r["metric"]["partition"]): float(r["value"][1]) for r in found}
            assert got == expected
            up = poll(lambda: query(port, "lagless_cluster_up"), 30, "lagless_cluster_up")
            assert float(up[0]["value"][1]) == 1.0
            assert query(port, f'lagless_group_lag_seconds{{group="{group}",partition="0"}}')
            assert api(base, "/api/cluster")["up"]
            ranked = [g["lag"] for g in api(base, "/api/groups?sort=lag&dir=desc&limit=1000")]
            assert ranked == sorted(ranked, reverse=True) and ranked[0] >= 3
            assert request(base.rstrip("/") + "/api/groups?sort=nope")[0] == 400
        finally:
            prom.terminate()
            prom.wait(30)
