"""The service under test: ``lagless consume`` processes, one per instance.

Each :class:`Instance` is a real engine in its own process, recording its group life
(``DIR/events.jsonl``), its timeline (``DIR/timeline.jsonl``) and its ledger
(``DIR/ledger.tsv``), and serving ``/readyz`` on its own port: the lab asks that probe, as a
Kubernetes Deployment would, whether a new instance is ready.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lagless.broker.embedded import free_port
from lagless.lab.model import EVENTS_FILE, LEDGER_FILE, InstanceEvent, Processed, read_events
from lagless.lab.model import read_ledger as read_ledger_file


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
    ever_ready: bool = False

    @property
    def name(self) -> str:
        return f"s{self.slot}-g{self.gen}"

    def start(self, bootstrap: str, args: list[str]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            *lagless_command(), "-b", bootstrap, "consume", *args,
            "--client-id", self.name, "--record", str(self.directory),
            "--ledger", str(self.directory / LEDGER_FILE), "--metrics-port", str(self.port),
            "--json",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.started_at = time.time()
        with (
            (self.directory / "stdout.json").open("wb") as out,
            (self.directory / "stderr.log").open("wb") as err,
        ):
            self.proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)

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
        doc = self.probe()
        ok = bool(doc and doc.get("ready"))
        self.ever_ready = self.ever_ready or ok
        return ok

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Ask it to stop (SIGTERM: drain, commit, then leave or not per its flags)."""
        self.stop_sent_at = time.time()
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)

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
        """Why it exited badly (its last stderr line), None while fine."""
        if self.proc is None or self.proc.poll() in (None, 0):
            return None
        lines = (self.directory / "stderr.log").read_text(errors="replace").strip().splitlines()
        return f"{self.name} exited {self.proc.returncode}: {lines[-1] if lines else ''}"

    def events(self) -> list[InstanceEvent]:
        return read_events(self.directory / EVENTS_FILE)

    def processed(self) -> list[Processed]:
        return read_ledger_file(self.directory / LEDGER_FILE, self.name)
