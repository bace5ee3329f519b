"""librdkafka's mock cluster held by a process of its own: the second broker beside Tansu.

librdkafka's mock cluster implements the group protocols faithfully (KIP-848
``group.protocol=consumer``, cooperative rebalances, commit metadata) where the embedded Tansu
broker does not. ``python -m lagless.broker.mock`` creates one through the C API
(:class:`~lagless.broker.mockapi.MockApi`), applies its settings (network RTT, KIP-848 session
and heartbeat, the classic group's initial rebalance delay), serves its control
(:mod:`lagless.broker.mockcontrol`: topics of any partition count, settings at run time), prints
its bootstrap and holds it until its stdin closes (``--until-stdin``, :class:`MockCluster`, for
tests) or until SIGTERM (:class:`MockBroker`, ``lagless broker start --kind mock``). Any process
then connects to that bootstrap like to a real cluster. It is a test cluster, not a production
broker: everything lives in the holder's memory. A topic nobody created is auto-created on first
use with :data:`AUTO_PARTITIONS` partitions.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType, TracebackType

from lagless.broker.embedded import default_state_dir, pid_alive, read_state_file, terminate
from lagless.errors import BrokerError, ClusterError

AUTO_PARTITIONS = 4  # partitions of an auto-created topic on the mock cluster
MOCK_CLUSTER_ID_PREFIX = "mockCluster"
MOCK_NAME = "librdkafka's mock cluster (a test cluster, not a production broker)"
STATE_FILE = "mock.json"
LOG_FILE = "mock.log"


@dataclass(frozen=True)
class MockSettings:
    """What a mock cluster starts with (None: librdkafka's default)."""

    brokers: int = 1
    rtt_ms: int = 0
    consumer_session_ms: int | None = None  # KIP-848 group.consumer.session.timeout.ms
    consumer_heartbeat_ms: int | None = None  # KIP-848 group.consumer.heartbeat.interval.ms
    rebalance_delay_ms: int | None = None  # classic group.initial.rebalance.delay.ms

    def args(self) -> list[str]:
        out = ["--brokers", str(self.brokers), "--rtt-ms", str(self.rtt_ms)]
        for flag, value in (
            ("--consumer-session-ms", self.consumer_session_ms),
            ("--consumer-heartbeat-ms", self.consumer_heartbeat_ms),
            ("--rebalance-delay-ms", self.rebalance_delay_ms),
        ):
            if value is not None:
                out += [flag, str(value)]
        return out


def _holder(settings: MockSettings, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lagless.broker.mock", *settings.args(), *extra]


class MockCluster:
    """A mock cluster held by a child process (``with MockCluster() as bootstrap``)."""

    def __init__(
        self, brokers: int = 1, timeout: float = 20.0, settings: MockSettings | None = None
    ) -> None:
        self.settings = settings or MockSettings(brokers=brokers)
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def start(self) -> str:
        self._proc = subprocess.Popen(
            _holder(self.settings, "--until-stdin"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line:
            err = self._proc.stderr.read() if self._proc.stderr else ""
            self.stop()
            raise ClusterError(f"the mock cluster did not start: {err.strip()[:200]}")
        self.bootstrap = line
        return line

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@dataclass(frozen=True)
class MockState:
    """What a running background mock cluster left in the state directory."""

    pid: int
    bootstrap: str
    control_port: int
    brokers: int
    log_path: str


class MockBroker:
    """The background mock cluster whose state lives in ``state_dir`` (``lagless broker
    start|status|stop --kind mock``)."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir or default_state_dir()

    @property
    def state_path(self) -> Path:
        return self.state_dir / STATE_FILE

    def read_state(self) -> MockState | None:
        return read_state_file(self.state_path, MockState, "mock")

    def status(self) -> MockState | None:
        """The running mock cluster, None if none was started; BrokerError if it died."""
        state = self.read_state()
        if state is not None and not pid_alive(state.pid):
            raise BrokerError(
                f"the mock cluster (pid {state.pid}) is dead; see {state.log_path}, then run "
                "'lagless broker stop --kind mock' to clear it"
            )
        return state

    def start(self, settings: MockSettings, timeout: float = 20.0) -> MockState:
        """Start it in the background (the running one if there is one) and wait for it."""
        running = self.status()
        if running is not None:
            return running
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.state_dir / LOG_FILE
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                _holder(settings, "--state", str(self.state_path)),
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.read_state()
            if state is not None and state.pid == proc.pid:
                return state
            if proc.poll() is not None:
                raise BrokerError(f"the mock cluster exited at start; see {log_path}")
            time.sleep(0.1)
        proc.kill()
        raise BrokerError(f"the mock cluster did not start in {timeout:.0f} s; see {log_path}")

    def stop(self) -> MockState | None:
        """Stop it and clear its state; the state it had (None if none was running)."""
        state = self.read_state()
        if state is None:
            return None
        terminate(state.pid)
        self.state_path.unlink(missing_ok=True)
        return state


def _until_stdin_closes(done: threading.Event) -> None:
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    done.set()


def hold(settings: MockSettings, state_path: Path | None) -> None:
    """Create a mock cluster, print its bootstrap, serve its control, keep it until stdin
    closes (no ``state_path``) or SIGTERM (writing ``state_path`` once it serves)."""
    from lagless.broker.mockapi import MockApi
    from lagless.broker.mockcontrol import ControlServer, register, unregister

    done = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_term)
    with MockApi(settings.brokers) as api:
        if settings.rtt_ms:
            api.set_rtt(settings.rtt_ms)
        if settings.rebalance_delay_ms is not None:
            api.set_rebalance_delay(settings.rebalance_delay_ms)
        api.set_consumer_session(settings.consumer_session_ms, settings.consumer_heartbeat_ms)
        server = ControlServer(api)
        server.thread.start()
        register(api.bootstrap, server.port)
        try:
            sys.stdout.write(api.bootstrap + "\n")
            sys.stdout.flush()
            if state_path is None:
                threading.Thread(target=_until_stdin_closes, args=(done,), daemon=True).start()
            else:
                state = MockState(os.getpid(), api.bootstrap, server.port, settings.brokers,
                                  str(state_path.with_name(LOG_FILE)))  # fmt: skip
                state_path.write_text(json.dumps(asdict(state)), encoding="utf-8")
            while not done.wait(1.0):
                pass
        finally:
            unregister(api.bootstrap)
            server.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lagless.broker.mock", description=__doc__)
    parser.add_argument("brokers_pos", nargs="?", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--rtt-ms", type=int, default=0)
    parser.add_argument("--consumer-session-ms", type=int)
    parser.add_argument("--consumer-heartbeat-ms", type=int)
    parser.add_argument("--rebalance-delay-ms", type=int)
    parser.add_argument("--state", type=Path, help="hold until SIGTERM; write the state here")
    parser.add_argument("--until-stdin", action="store_true", help="hold until stdin closes")
    args = parser.parse_args(argv)
    settings = MockSettings(
        brokers=args.brokers_pos or args.brokers, rtt_ms=args.rtt_ms,
        consumer_session_ms=args.consumer_session_ms,
        consumer_heartbeat_ms=args.consumer_heartbeat_ms,
        rebalance_delay_ms=args.rebalance_delay_ms,
    )  # fmt: skip
    hold(settings, args.state)


if __name__ == "__main__":
    main()
