"""The pytest plugin shipped with lagless (lagless.testing): a test written as a user would,
and docs/app.md's test found through the entry point by a fresh project with its own broker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import lagless
from lagless.testing import TestKafka
from tests.integration.app_helpers.docs import block_with

pytestmark = pytest.mark.integration


def test_a_user_tests_an_app_in_a_few_lines(lagless_kafka: TestKafka, lagless_topic: str) -> None:
    out = lagless_kafka.topic()
    app = lagless.App(group="greeter", session_timeout_ms=6000, heartbeat_interval_ms=1500)

    @app.handler(lagless_topic, value=str, output=out, on_failure="stop")
    def greet(name: str) -> str:
        return f"hello {name}"

    lagless_kafka.produce(lagless_topic, ["ada", "grace"])
    with app.configured(lagless_kafka.settings).running():
        greetings = lagless_kafka.read(out, count=2)

    assert sorted(r.value for r in greetings) == [b"hello ada", b"hello grace"]
    assert app.summaries == {}  # the configured copy ran, not this one
    assert lagless_kafka.read(lagless_topic)[0].topic == lagless_topic


def test_the_plugin_is_found_by_a_fresh_project_and_starts_its_broker(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(block_with("docs/app.md", "def test_upper"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAGLESS_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_produce_refuses_one_value_given_as_the_values(lagless_kafka: TestKafka) -> None:
    topic = lagless_kafka.topic()
    for one in ("abc", b"abc", {"id": 1}):
        with pytest.raises(TypeError, match="a list of values"):
            lagless_kafka.produce(topic, one)  # type: ignore[arg-type]
    assert lagless_kafka.produce(topic, ["abc"]) == 1
    assert [r.value for r in lagless_kafka.read(topic, count=1)] == [b"abc"]
