"""The ``lagless deploy render`` commands of docs/deploy.md run as written, next to the
README's service.py, and say what the page shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import run_cli
from tests.deploy.apps import README_SERVICE

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def render_commands() -> list[list[str]]:
    shell = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    lines = [line for block in shell for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("lagless deploy render")]


def test_the_pages_render_commands_run(tmp_path: Path) -> None:
    (tmp_path / "service.py").write_text(README_SERVICE)
    commands = render_commands()
    assert len(commands) == 2
    for args in commands:
        result = run_cli(*args, cwd=tmp_path, timeout=120)
        assert result.returncode == 0, result.stderr
    text = DOC.read_text()
    first = run_cli(*commands[0], cwd=tmp_path, timeout=120)
    for line in first.stderr.splitlines():  # the page quotes what the first one says
        assert line in text, line
    assert sorted(p.name for p in (tmp_path / "k8s").iterdir()) == [
        "00-deployment.yaml", "01-service-metrics.yaml", "02-poddisruptionbudget.yaml",
    ]  # fmt: skip
