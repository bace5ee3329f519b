"""The global options are moved in front of the sub-command, wherever they were typed."""

from __future__ import annotations

import pytest

from lagless.cli.globals import hoist, librdkafka_properties
from lagless.errors import ConfigError


def test_global_options_anywhere_move_in_front() -> None:
    assert hoist(["tail", "T", "-b", "h:1", "--count", "2"]) == ["-b", "h:1", "tail", "T",
                                                                  "--count", "2"]  # fmt: skip
    assert hoist(["group", "describe", "G", "-X", "a=1", "-bh:2", "--bootstrap=h:3", "-v"]) == [
        "-X", "a=1", "-bh:2", "--bootstrap=h:3", "-v", "group", "describe", "G"
    ]  # fmt: skip
    assert hoist(["produce", "T", "--", "-b", "x"]) == ["produce", "T", "--", "-b", "x"]
    assert hoist(["group", "reset-offsets", "G", "--shift-by", "-3"])[-1] == "-3"
    assert hoist(["tail", "T", "-b"]) == ["-b", "tail", "T"]  # the parser says what is missing


def test_x_properties() -> None:
    assert librdkafka_properties(["a.b=1", "c= x=y"]) == {"a.b": "1", "c": " x=y"}
    with pytest.raises(ConfigError, match=r"-X a\.b: give a librdkafka property"):
        librdkafka_properties(["a.b"])
