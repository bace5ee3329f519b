"""An environment switch: 1 on, 0 off, on when unset, one clear error otherwise."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.switches import switched_on


def test_a_switch_is_on_when_unset_and_what_it_says_when_set() -> None:
    assert switched_on("LAGLESS_X", "x", {}) is True
    assert switched_on("LAGLESS_X", "x", {"LAGLESS_X": " 1 "}) is True
    assert switched_on("LAGLESS_X", "x", {"LAGLESS_X": "0"}) is False
    with pytest.raises(ConfigError, match=r"LAGLESS_X='yes': use 1 \(x\) or 0"):
        switched_on("LAGLESS_X", "x", {"LAGLESS_X": "yes"})
