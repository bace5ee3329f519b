"""Every ```python block of README.md and docs/*.md runs as written, against the test broker.

The convention every docs example follows (new examples are picked up automatically):

* The blocks of one file run in order in one fresh interpreter, like a notebook: a later
  block may use names an earlier one defined. Each file runs in its own empty working
  directory, so relative paths (``out``, ``ck``) land there.
* A block takes its cluster as a user would: ``KafkaSettings().to_librdkafka()`` (which reads
  ``LAGLESS_BOOTSTRAP``, set here to the test broker), and creates the topics it reads
  (``create_topic(..., exist_ok=True)``) and the records it needs.
* A block must end: bound its runs (``until_idle_s``, ``count``, ``trigger="available-now"``).
* A file whose blocks need Spark (they mention ``lagless.spark`` or ``SparkSession``) is
  marked ``spark`` and ``slow``.
* Only a block right after the line ``<!-- docs-example: not run: REASON -->`` is left out;
  the test reports each such block with its reason (a skip), so none hides.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cluster

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.DOTALL)
NOT_RUN = re.compile(r"<!-- docs-example: not run: (?P<reason>.+?) -->")

pytestmark = pytest.mark.integration


def blocks(path: Path) -> tuple[list[str], list[str]]:
    """The runnable blocks of ``path`` and the reasons of those left out."""
    runnable: list[str] = []
    left_out: list[str] = []
    for match in BLOCK.finditer("\n" + path.read_text()):
        marker = NOT_RUN.search(match["before"])
        if marker:
            left_out.append(marker["reason"])
        else:
            runnable.append(match["code"])
    return runnable, left_out


def needs_spark(code: list[str]) -> bool:
    return any("lagless.spark" in c or "SparkSession" in c for c in code)


def doc_params() -> list[object]:
    params: list[object] = []
    for path in DOCS:
        code, _ = blocks(path)
        if not code and not blocks(path)[1]:
            continue
        marks = [pytest.mark.spark, pytest.mark.slow] if needs_spark(code) else []
        params.append(pytest.param(path, id=path.name, marks=marks))
    return params


@pytest.mark.parametrize("path", doc_params())
def test_docs_examples_run(cluster: Cluster, path: Path, tmp_path: Path) -> None:
    code, left_out = blocks(path)
    if code:
        script = "\n\n".join(
            f"# --- {path.name} block {i + 1}\n{block}" for i, block in enumerate(code)
        )
        env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap, "PYTHONPATH": str(REPO)}
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode == 0, (
            f"{path.name}: an example failed\n{result.stderr[-3000:]}\n--- script\n{script}"
        )
    if left_out:
        pytest.skip(f"{path.name}: {len(left_out)} block(s) not run: {'; '.join(left_out)}")
