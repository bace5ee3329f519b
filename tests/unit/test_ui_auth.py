"""Who may use the console: loopback without a token, a token elsewhere; bearer or cookie."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.ui.auth import COOKIE, Guard, loopback
from lagless.ui.scrape import quantile

TOKEN = "0123456789abcdef-token"


def test_off_loopback_needs_a_token() -> None:
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0") and not loopback("example.org")
    with pytest.raises(ConfigError, match="not loopback"):
        Guard("0.0.0.0", None, False)
    with pytest.raises(ConfigError, match="at least 16"):
        Guard("127.0.0.1", "short", False)
    assert Guard("127.0.0.1", None, False).allowed({})


def test_bearer_or_session_cookie() -> None:
    guard = Guard("0.0.0.0", TOKEN, False)
    assert not guard.allowed({})
    assert not guard.allowed({"Authorization": "Bearer nope"})
    assert guard.allowed({"Authorization": f"Bearer {TOKEN}"})
    assert guard.allowed({"Cookie": f"{COOKIE}={guard.session()}"})
    assert not guard.allowed({"Cookie": f"{COOKIE}={TOKEN}"})  # the cookie is not the token
    assert not guard.allowed({"Cookie": 'bad"cookie'})
    assert guard.csrf_ok(guard.csrf) and not guard.csrf_ok(None) and not guard.csrf_ok("x")


def test_quantile_interpolates_in_buckets() -> None:
    buckets = [(0.1, 50.0), (1.0, 100.0), (float("inf"), 100.0)]
    assert quantile(0.5, buckets) == pytest.approx(0.1)
    assert quantile(0.99, buckets) == pytest.approx(0.1 + 0.9 * 49 / 50)
    assert quantile(0.5, [(1.0, 0.0)]) is None
