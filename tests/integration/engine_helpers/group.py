"""Members of one group on librdkafka's mock cluster, each a ``lagless consume`` process
with its ledgers and event log (see tests/integration/test_engine_rebalance_mock.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from pathlib import Path

from lagless.engine.results.ledger import LedgerLine, read_ledger
from tests.integration import engine_helpers as helpers
from tests.integration.engine_helpers.mock import mock_committed, mock_ends


class Group:
    """``lagless consume`` members of one eager group on the mock cluster, each with its
    handler ledger (ids), engine ledger (partition, offset, id) and event log."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        self.bootstrap, self.tmp = bootstrap, tmp_path
        self.topic, self.group = f"eager-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.logs: dict[str, str] = {}
        self.formed: dict[str, int] = {}  # each member's revokes when the group had formed
        self.repeatable: set[str] = set()  # ids that may run twice (see started_together)

    def produce(self, count: int, prefix: str) -> list[str]:
        conf = {"bootstrap.servers": self.bootstrap}
        return helpers.produce_jobs(
            conf, self.topic, count, sleep_ms=(3, 9), keys=40, prefix=prefix
        )

    def start(self, name: str, *extra: str) -> None:
        """Member ``name`` (``extra``: more ``lagless consume`` flags)."""
        cmd = helpers.consume_cmd(
            self.bootstrap, self.topic, self.group, "--handler", helpers.LEDGER_HANDLER,
            "--on-failure", "stop", "--json", "--assignor", "range", "--until-idle", "2",
            "--ledger", str(self.tmp / f"{name}.tsv"), "--record", str(self.tmp / name),
            *extra,
        )  # fmt: skip
        self.procs[name] = helpers.spawn(cmd, self.tmp / f"{name}.ids")

    def assigned(self, name: str) -> bool:
        events = self.tmp / name / "events.jsonl"
        return events.exists() and any(
            json.loads(line).get("kind") == "assigned" and json.loads(line).get("partitions")
            for line in events.read_text().splitlines()
        )

    def revokes(self, name: str) -> int:
        events = self.tmp / name / "events.jsonl"
        return sum(json.loads(line).get("kind") == "revoked"
                   for line in events.read_text().splitlines())  # fmt: skip

    def stop(self, name: str, timeout: float = 30) -> None:
        self.procs[name].send_signal(signal.SIGTERM)
        self.finish(name, timeout)

    def finish(self, name: str, timeout: float, expect: int = 0) -> str:
        """Wait for member ``name`` to exit with ``expect``; its stdout (stderr in ``logs``)."""
        code, out, err = helpers.finish(self.procs[name], timeout)
        self.logs[name] = err
        assert code == expect, err[-3000:]
        return out

    def kill_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def ledger(self) -> list[LedgerLine]:
        return [line for name in self.procs for line in read_ledger(self.tmp / f"{name}.tsv")]

    def exactly_once(self, ids: list[str]) -> None:
        """Every id ran once across the members' handler ledgers (those in ``repeatable``
        once or twice)."""
        ledger = helpers.read_ledgers(self.tmp / f"{n}.ids" for n in self.procs)
        for rid in self.repeatable:
            if ledger[rid] == 2:
                ledger[rid] = 1
        helpers.assert_exactly_once(ledger, ids)

    def check_done(self, ids: list[str]) -> None:
        """Every id ran, the group committed every partition's end."""
        assert set(ids) <= set(helpers.read_ledgers(self.tmp / f"{n}.ids" for n in self.procs))
        committed = mock_committed(self.bootstrap, self.group, self.topic)
        assert committed == mock_ends(self.bootstrap, self.topic), "\n".join(self.logs.values())
