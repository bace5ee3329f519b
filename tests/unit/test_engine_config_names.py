"""EngineConfig is the one validation of engine options; the CLI maps its flags onto it, and
its errors then name the flags."""

from __future__ import annotations

import pytest

from lagless.cli.consume import FLAGS
from lagless.engine import EngineConfig
from lagless.errors import ConfigError


def test_errors_name_the_callers_flags() -> None:
    cases = [
        ({"group_protocol": "consumer", "session_timeout_ms": 6000},
         "--session-timeout-ms: not with --group-protocol consumer (KIP-848 moves the assignor "
         "and the session timeout to the broker)"),
        ({"assignor": "rr"},
         "--assignor (assignor): Input should be 'cooperative-sticky', 'range' or 'roundrobin'"),
        ({"remote_assignor": "uniform"},
         "--remote-assignor applies only with --group-protocol consumer"),
        ({"max_in_flight": 0},
         "--max-in-flight (max_in_flight): Input should be greater than or equal to 1"),
        ({"auto_offset_reset": "middle"},
         "--offset-reset (auto_offset_reset): Input should be 'earliest' or 'latest'"),
        ({"dlq_topic": "d", "on_failure": "skip"}, "--on-failure applies only without --dlq-topic"),
    ]  # fmt: skip
    for values, line in cases:
        with pytest.raises(ConfigError) as caught:
            EngineConfig.build(FLAGS, **{"topics": ("t",), "group": "g", "on_failure": "stop",
                                         **values})  # fmt: skip
        assert str(caught.value) == line


def test_without_an_answer_for_failed_records_the_flags_are_named() -> None:
    with pytest.raises(ConfigError) as caught:
        EngineConfig.build(FLAGS, topics=("t",), group="g")
    assert str(caught.value) == (
        "without a DLQ topic (--dlq-topic), choose what a failed record does: stop or skip "
        "(--on-failure stop|skip)"
    )


def test_without_names_errors_name_the_fields() -> None:
    with pytest.raises(ConfigError, match=r"^max_in_flight: Input should be"):
        EngineConfig.build(topics=("t",), group="g", on_failure="stop", max_in_flight=0)


def test_every_field_the_cli_maps_is_a_field() -> None:
    assert set(FLAGS) <= set(EngineConfig.model_fields)
