"""The rebalance lab: every scenario rolled under the same load, side by side, in one run.

Prints one JSON object (the lab's ``--json``: the broker, the config, one object per scenario,
the ablation, the best improvement over eager-defaults) plus ``bench``: how the broker was
started. Usage: python bench/rebalance.py [--broker tansu|mock] [--mock-heartbeat-ms MS]
[lab options...], e.g. ``--scenarios eager-defaults,mitigated`` or ``--profile article``.
The cluster is LAGLESS_BOOTSTRAP, else a fresh embedded broker (``--broker tansu``, the
default) or a fresh librdkafka mock cluster (``--broker mock``: a test cluster, not a
production broker; ``--mock-heartbeat-ms`` sets its KIP-848 heartbeat interval, librdkafka's
default 5,000 ms otherwise). The instances' records and the HTML page go to
out/bench/rebalance-TIME/. At the defaults about 10-15 minutes; ``--profile article`` takes
the 360-s window per scenario plus start and drain. SIGTERM or Ctrl-C stops the lab, which
still prints the scenarios that finished.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import bench_cluster
from lagless.broker.mock import MockCluster, MockSettings

LAGLESS = str(Path(sys.executable).parent / "lagless")


@contextmanager
def cluster(kind: str, heartbeat_ms: int | None) -> Iterator[str]:
    if kind == "mock":
        with MockCluster(settings=MockSettings(consumer_heartbeat_ms=heartbeat_ms)) as bootstrap:
            yield bootstrap
        return
    with bench_cluster() as (bootstrap, _embedded):
        yield bootstrap


def forward(lab: subprocess.Popen[str]) -> None:
    """SIGTERM (forwarded) or Ctrl-C (the terminal sends it to the lab too) stops the lab,
    which prints the scenarios that finished (exit 130); this script then prints them too,
    rather than dying with nothing."""

    def stop(_signum: int, _frame: object) -> None:
        if lab.poll() is None:
            lab.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def main() -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--broker", choices=("tansu", "mock"), default="tansu")
    parser.add_argument("--mock-heartbeat-ms", type=int)
    ours, lab_args = parser.parse_known_args()
    out = Path("out") / "bench" / time.strftime("rebalance-%Y%m%d-%H%M%S")
    with cluster(ours.broker, ours.mock_heartbeat_ms) as bootstrap:
        lab = subprocess.Popen(
            [LAGLESS, "-b", bootstrap, "lab", "rebalance", "--json", "--out", str(out),
             *lab_args],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        forward(lab)
        stdout, _ = lab.communicate()
    try:
        doc = json.loads(stdout)
    except ValueError:
        sys.stdout.write(stdout)
        return lab.returncode or 1
    doc["bench"] = {"broker": ours.broker, "mock_heartbeat_ms": ours.mock_heartbeat_ms,
                    "args": lab_args}  # fmt: skip
    sys.stdout.write(json.dumps(doc) + "\n")
    return lab.returncode


if __name__ == "__main__":
    sys.exit(main())
