"""The README's first example runs as written: its service.py, then its shell block (topics,
the app in the background, a payment sent, the big payment read back, the app stopped)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import VENV_BIN, Cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # six CLI processes, ~100 s loaded

README = Path(__file__).resolve().parents[2] / "README.md"


def first_example() -> tuple[str, str]:
    """The first python block (service.py) and the shell block right after it."""
    text = README.read_text()
    python = re.search(r"```python\n(.*?)\n```", text, re.DOTALL)
    assert python is not None
    shell = re.search(r"```sh\n(.*?)\n```", text[python.end() :], re.DOTALL)
    assert shell is not None
    return python[1], shell[1]


def test_the_readme_first_example_sends_a_payment_and_reads_it_back(
    cluster: Cluster, tmp_path: Path
) -> None:
    service, shell = first_example()
    assert service.startswith("# service.py\n")
    assert "lagless produce payments" in shell  # how to send it a payment
    (tmp_path / "service.py").write_text(service)
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap,
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    done = subprocess.run(
        ["bash", "-e", "-c", shell], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '{"payment_id":"p1","amount":250.0}' in done.stdout.splitlines()
