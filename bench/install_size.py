"""How big a service's environment is: lagless without extras beside lagless[all].

    python bench/install_size.py

Builds lagless's wheel, installs it into two fresh virtualenvs (dependencies from the package
index, pinned by constraints.txt) and prints one JSON object: the size of each site-packages
in MB (pip and setuptools excluded), the ratio and the target (under 150 MB for the lean one).
docs/benchmarks/install_size.md holds the current table.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from _venvs import build_wheel, installed_bytes, make_venv

MB = 1_000_000
TARGET_MB = 150


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lagless-install-size-") as tmp:
        root = Path(tmp)
        wheel = build_wheel(root / "wheel")
        lean = installed_bytes(make_venv(root / "lean", wheel))
        full = installed_bytes(make_venv(root / "full", wheel, "[all]"))
    result = {
        "bench": "install_size",
        "lean_mb": round(lean / MB, 1),
        "full_mb": round(full / MB, 1),
        "full_over_lean": round(full / lean, 1),
        "target_lean_mb": TARGET_MB,
        "lean_under_target": lean / MB < TARGET_MB,
        "lean": "pip install lagless",
        "full": "pip install 'lagless[all]' (spark, broker, lab, schemaregistry)",
        "excluded": "pip, setuptools",
        "python": platform.python_version(),
        "seconds": round(time.monotonic() - started, 1),
    }
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
