"""Helpers of the console's tests: start ``lagless ui`` and ``lagless consume`` as processes,
read the API (pages in Chromium: tests/integration/browser.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LAGLESS = str(Path(sys.executable).parent / "lagless")


def env_for(home: Path, bootstrap: str) -> dict[str, str]:
    env = {**os.environ, "LAGLESS_HOME": str(home), "LAGLESS_BOOTSTRAP": bootstrap}
    env.pop("LAGLESS_UI_TOKEN", None)
    return env


class Proc:
    """A lagless process with its output in files."""

    def __init__(self, args: list[str], env: dict[str, str], out: Path, name: str) -> None:
        self.stdout = out / f"{name}.out"
        self.stderr = out / f"{name}.err"
        with self.stdout.open("wb") as so, self.stderr.open("wb") as se:
            self.proc = subprocess.Popen([LAGLESS, *args], env=env, stdout=so, stderr=se)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def err(self) -> str:
        return self.stderr.read_text(errors="replace")


def wait_url(proc: Proc, timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = proc.stdout.read_text() if proc.stdout.exists() else ""
        if text.startswith("http"):
            return text.split()[0]
        assert proc.proc.poll() is None, f"lagless ui exited: {proc.err()}"
        time.sleep(0.1)
    raise AssertionError(f"lagless ui printed no URL within {timeout} s: {proc.err()}")


def request(url: str, method: str = "GET", data: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            body = reply.read()
            status, got = reply.status, dict(reply.headers.items())
    except urllib.error.HTTPError as exc:
        body, status, got = exc.read(), exc.code, dict(exc.headers.items())
    kind = got.get("Content-Type", "")
    return status, json.loads(body) if "json" in kind else body.decode(), got


def api(base: str, path: str) -> Any:
    status, doc, _ = request(base.rstrip("/") + path)
    assert status == 200, (path, status, doc)
    return doc


def poll(check: Any, timeout: float, what: str, every: float = 0.3) -> Any:
    """Call ``check()`` until it returns something truthy; its value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")


@contextmanager
def console(home: Path, bootstrap: str, out: Path, *args: str) -> Iterator[tuple[str, Proc]]:
    proc = Proc(["ui", "--port", "0", "--interval", "0.5", *args], env_for(home, bootstrap),
                out, "ui")  # fmt: skip
    try:
        yield wait_url(proc), proc
    finally:
        proc.stop()
