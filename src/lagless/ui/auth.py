"""Who may use the console, and what they may change.

* On 127.0.0.1 (the default) no token is needed. Any other host needs one (``--token`` or
  ``LAGLESS_UI_TOKEN``): the console refuses to start without it. With a token, every page and
  API call needs it — ``Authorization: Bearer TOKEN``, or the cookie the login form sets — and
  is answered 401 otherwise.
* Read-only unless started with ``--allow-writes``; writes are POSTs carrying the CSRF token of
  the page (``X-CSRF-Token`` header or ``csrf`` form field) and a confirmation step.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie

from lagless.errors import ConfigError

COOKIE = "lagless_ui"
MIN_TOKEN = 16


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """The console's access rules (one per server)."""

    def __init__(self, host: str, token: str | None, allow_writes: bool) -> None:
        if token is not None and len(token) < MIN_TOKEN:
            raise ConfigError(f"--token must be at least {MIN_TOKEN} characters")
        if token is None and not loopback(host):
            raise ConfigError(
                f"--host {host} is not loopback: give a token (--token or LAGLESS_UI_TOKEN) so "
                "the console is not open to anyone who can reach it"
            )
        self.token = token
        self.allow_writes = allow_writes
        self._secret = secrets.token_bytes(32)
        self.csrf = hmac.new(self._secret, b"csrf", hashlib.sha256).hexdigest()

    def session(self) -> str:
        """The cookie value the login form sets (derived from the token, never the token)."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"lagless-ui-session", hashlib.sha256).hexdigest()

    def check_token(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def allowed(self, headers: Mapping[str, str]) -> bool:
        """Whether a request with these headers may read."""
        if self.token is None:
            return True
        bearer = headers.get("Authorization", "")
        if bearer.startswith("Bearer ") and self.check_token(bearer[7:].strip()):
            return True
        try:
            jar = SimpleCookie(headers.get("Cookie", ""))
        except CookieError:
            return False
        cookie = jar.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.value, self.session())

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())
