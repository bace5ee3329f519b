"""The rebalance lab at its defaults: every scenario rolled under the same load, side by side.

Prints one JSON object (the lab's ``--json``: the broker, one object per scenario, the best
improvement over eager-defaults). Usage: python bench/rebalance.py [lab options...], e.g.
``--scenarios eager-defaults,mitigated`` or the article's size ``--partitions 48 --rate 3600``.
The cluster is LAGLESS_BOOTSTRAP, else a fresh embedded broker; the instances' records and
the HTML page go to out/bench/rebalance-TIME/. About 10-15 minutes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import bench_cluster

LAGLESS = str(Path(sys.executable).parent / "lagless")


def main() -> int:
    out = Path("out") / "bench" / time.strftime("rebalance-%Y%m%d-%H%M%S")
    with bench_cluster() as (bootstrap, _embedded):
        result = subprocess.run(
            [LAGLESS, "-b", bootstrap, "lab", "rebalance", "--json", "--out", str(out),
             *sys.argv[1:]],
            stdout=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    sys.stdout.write(result.stdout)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
