"""The C range reader's switch and configuration (the reading itself: integration tests)."""

from __future__ import annotations

import pytest

from lagless.config import unknown_variables
from lagless.errors import ConfigError
from lagless.spark.connector.native_fetch import SWITCH, conf_pairs, switch


def test_switch_is_on_unless_0_and_rejects_anything_else() -> None:
    assert switch({}) is True
    assert switch({SWITCH: "1"}) is True
    assert switch({SWITCH: " 0 "}) is False
    for bad in ("yes", "", "2", "false"):
        with pytest.raises(ConfigError, match=rf"{SWITCH}=.*: use 1 \(read with .*\) or 0"):
            switch({SWITCH: bad})


def test_the_switch_is_a_known_variable_and_a_typo_is_not() -> None:
    assert unknown_variables({SWITCH: "0"}) == []
    (line,) = unknown_variables({"LAGLESS_SPARK_NATIVE_READR": "0"})
    assert SWITCH in line


def test_conf_pairs_are_librdkafka_strings_or_the_reason_they_cannot_be() -> None:
    pairs = conf_pairs({"a": True, "b": False, "c": 5, "d": 0.5, "e": "x"})
    assert pairs == [("a", "true"), ("b", "false"), ("c", "5"), ("d", "0.5"), ("e", "x")]
    why = conf_pairs({"bootstrap.servers": "h:1", "oauth_cb": print})
    assert isinstance(why, str) and "oauth_cb" in why
