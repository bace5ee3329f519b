"""The switch of the source runner's fork server (lagless.spark.connector.prefork)."""

from __future__ import annotations

import sys

import pytest

from lagless.errors import ConfigError
from lagless.spark.connector import prefork


@pytest.mark.parametrize("value", ["yes", "true", "2", "off", ""])
def test_a_switch_value_other_than_0_or_1_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(prefork.SWITCH, value)
    with pytest.raises(ConfigError, match=r"LAGLESS_SPARK_PREFORK=.*use 1 .* or 0"):
        prefork.spark_python(sys.executable)


def test_switched_off_spark_runs_the_interpreter_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(prefork.SWITCH, "0")
    assert prefork.spark_python(sys.executable) == sys.executable


def test_the_launcher_sends_only_the_source_runner_to_the_server() -> None:
    text = prefork.LAUNCHER.format(runner=prefork.RUNNER, python="PY", client="C", sock="S")
    assert (
        'if [ "$1" = "-m" ] && [ "$2" = pyspark.sql.streaming.python_streaming_source_runner ]'
        in text
    )
    assert 'exec PY -I -S C S PY "$@"' in text and text.rstrip().endswith('exec PY "$@"')
