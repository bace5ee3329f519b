"""The service under test: ``lagless consume`` processes, one per instance.

Each :class:`Instance` is a real engine in its own process, recording its group life
(``DIR/events.jsonl``), its timeline (``DIR/timeline.jsonl``) and its ledger
(``DIR/ledger.tsv``), and serving ``/readyz`` on its own port: the lab asks that probe, as a
Kubernetes Deployment would, whether a new instance is ready.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lagless.broker.embedded import free_port
from lagless.lab.model import EVENTS_FILE, LEDGER_FILE, InstanceEvent, Processed, read_events
from lagless.lab.model import read_ledger as read_ledger_file

PR_SET_PDEATHSIG = 1


def _prctl() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").prctl
    except (OSError, AttributeError):
        return None


PRCTL = _prctl()  # resolved here: the child between fork and exec only calls it


def stop_with_parent() -> None:
    """In the child: get SIGTERM when the lab dies, even by kill -9 (Linux; elsewhere a no-op),
    so that no instance outlives the lab. One system call: safe between fork and exec."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def lagless_command() -> list[str]:
    """How to run ``lagless`` from here: the script beside this interpreter, else ``-m``."""
    script = Path(sys.executable).parent / "lagless"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from lagless.cli.app import main; main()"]


@dataclass
class Instance:
    """One ``lagless consume`` process of the service (slot ``slot``, generation ``gen``)."""

    slot: int
    gen: int
    directory: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    stop_sent_at: float | None = None
    exited_at: float | None = None  # when the lab first saw the process gone
    ready_since: float | None = None  # monotonic: ready without a break since

    @property
    def name(self) -> str:
        return f"s{self.slot}-g{self.gen}"

    def start(self, bootstrap: str, args: list[str], env: Mapping[str, str] | None = None) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            *lagless_command(), "-b", bootstrap, "consume", *args,
            "--client-id", self.name, "--record", str(self.directory),
            "--ledger", str(self.directory / LEDGER_FILE), "--metrics-port", str(self.port),
            "--json",
        ]  # fmt: skip
        environ = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.started_at = time.time()
        with (
            (self.directory / "stdout.json").open("wb") as out,
            (self.directory / "stderr.log").open("wb") as err,
        ):
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=err, env=environ,
                preexec_fn=stop_with_parent,  # noqa: PLW1509 (one system call, no locks)
            )  # fmt: skip

    def probe(self, timeout: float = 0.5) -> dict[str, Any] | None:
        """The instance's ``/readyz`` answer (ready or not), None if it does not answer."""
        url = f"http://127.0.0.1:{self.port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                doc: dict[str, Any] = json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 503: alive, not ready
            try:
                doc = json.loads(exc.read())
            except ValueError:
                return None
        except (OSError, ValueError):
            return None
        return doc

    def ready(self) -> bool:
        """Its ``/readyz`` says ready now."""
        doc = self.probe()
        ok = bool(doc and doc.get("ready"))
        if not ok:
            self.ready_since = None
        elif self.ready_since is None:
            self.ready_since = time.monotonic()
        return ok

    def available(self, min_ready_s: float) -> bool:
        """Ready without a break for ``min_ready_s`` (a Deployment's minReadySeconds)."""
        if not self.ready() or self.ready_since is None:
            return False
        return time.monotonic() - self.ready_since >= min_ready_s

    @property
    def running(self) -> bool:
        alive = self.proc is not None and self.proc.poll() is None
        if not alive and self.exited_at is None and self.proc is not None:
            self.exited_at = time.time()
        return alive

    def stop(self) -> None:
        """Ask it to stop (SIGTERM: drain, commit, then leave or not per its flags)."""
        self.stop_sent_at = time.time()
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL it (what Kubernetes does once the grace period after SIGTERM is over)."""
        if self.running:
            assert self.proc is not None
            self.proc.kill()

    def wait(self, timeout: float) -> int | None:
        """Its exit code; killed (and None) if it does not exit within ``timeout``."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def failure(self) -> str | None:
        """Why it exited badly (a signal, or its last stderr line), None while fine."""
        if self.proc is None or self.proc.poll() in (None, 0):
            return None
        code = self.proc.returncode
        if code < 0:
            return f"{self.name} was killed by signal {-code} ({signal.Signals(-code).name})"
        lines = (self.directory / "stderr.log").read_text(errors="replace").strip().splitlines()
        last = lines[-1] if lines else "no message"
        return f"{self.name} exited with code {code}: {last}"

    def events(self) -> list[InstanceEvent]:
        return read_events(self.directory / EVENTS_FILE)

    def processed(self) -> list[Processed]:
        return read_ledger_file(self.directory / LEDGER_FILE, self.name)
