"""`lagless run` as a developer meets it: Ctrl-C while it starts, what it prints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine.events import EVENTS_FILE, EventKind
from lagless.lab.model import read_events
from tests.conftest import LAGLESS, Cluster, ignoring_sigint, run_cli, unique
from tests.integration.engine_helpers import GROUP_FLAGS

pytestmark = pytest.mark.integration

APP = (
    "import lagless\napp = lagless.App(group='g')\n"
    "@app.handler('t', on_failure='skip')\ndef h(value): ...\n"
)


SIGNALS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]


@pytest.mark.parametrize(("sig", "code", "word"), SIGNALS)
@pytest.mark.parametrize("after", [0.3, 2.5])
def test_ctrl_c_or_sigterm_during_start_up_is_one_line(
    tmp_path: Path, after: float, sig: signal.Signals, code: int, word: str
) -> None:
    """Interrupted while importing (0.3 s) or while waiting for an unreachable cluster."""
    (tmp_path / "service.py").write_text(APP)
    proc = subprocess.Popen(
        [LAGLESS, "-b", "127.0.0.1:1", "run", "service:app"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(after)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err == f"lagless: {word}\n" and out == ""


@pytest.mark.parametrize(("sig", "code", "word"), SIGNALS)
def test_ctrl_c_or_sigterm_while_waiting_for_the_cluster_ends_the_wait_at_once(
    sig: signal.Signals, code: int, word: str
) -> None:
    """The wait for a cluster that does not answer (60 s here) ends at the Ctrl-C, with one
    line: the Ctrl-C is never raised inside librdkafka's call (where it was lost, or honoured
    only once the call had waited its whole timeout)."""
    proc = subprocess.Popen(
        [LAGLESS, "-b", "127.0.0.1:1", "consume", "--topic", "t", "--group", "g",
         "--handler", "noop", "--on-failure", "skip", "--connect-timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(4)  # imports done (a second or two on a loaded machine): in the wait
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == code, err
    assert err == f"lagless: {word}\n" and out == ""
    assert time.monotonic() - sent < 20, "the Ctrl-C waited for the connect timeout"


def test_started_ignoring_sigint_a_consumer_keeps_ignoring_it_and_stops_on_sigterm(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """``lagless consume ... &`` in a script: a Ctrl-C at the terminal is not for it."""
    topic = make_topic(1)
    command = [LAGLESS, "consume", "--topic", topic, "--group", unique("g"), "--json",
               "--handler", "noop", "--on-failure", "skip", "--record", str(tmp_path),
               *GROUP_FLAGS]  # fmt: skip
    proc = subprocess.Popen(
        ignoring_sigint(*command),
        env={**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not assigned(tmp_path / EVENTS_FILE) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert assigned(tmp_path / EVENTS_FILE), "never assigned"
        proc.send_signal(signal.SIGINT)
        time.sleep(2)
        assert proc.poll() is None, proc.communicate()  # still consuming
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "interrupted" not in err and json.loads(out)["processed"] == 0


def assigned(events: Path) -> bool:
    return any(event.kind is EventKind.ASSIGNED for event in read_events(events))


FAILING = """import lagless

app = lagless.App(group=GROUP)


def check(value: bytes) -> None:
    raise ValueError(f"bad amount in {value!r}")


@app.handler(SOURCE, dlq=DLQ, retries=0)
def handle(value: bytes) -> None:
    check(value)
"""


def test_a_failing_handler_traceback_in_the_log_and_the_dead_letter(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    source, dlq = make_topic(1), make_topic(1)
    code = FAILING.replace("GROUP", repr(unique("g"))).replace("SOURCE", repr(source))
    (tmp_path / "failing.py").write_text(code.replace("DLQ", repr(dlq)))
    assert run_cli("produce", source, "--from", "-", cluster=cluster,
                   stdin="a\nb\nc\n").returncode == 0  # fmt: skip
    run = run_cli("run", "failing:app", "--until-idle", "2", "--json", *GROUP_FLAGS,
                  cluster=cluster, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["handle"]["dlq"] == 3
    # the first failure of its kind in full at the default verbosity, the others not
    assert run.stderr.count("Traceback (most recent call last)") == 1, run.stderr
    assert 'failing.py", line 7, in check' in run.stderr
    assert "ValueError: bad amount in b'a'" in run.stderr
    tailed = run_cli("tail", dlq, "--json", cluster=cluster)
    letters = [json.loads(line) for line in tailed.stdout.splitlines()]
    assert len(letters) == 3
    for letter in letters:
        headers = dict(letter["headers"])
        trace = headers["lagless-dlq-stacktrace"]
        assert trace.startswith("Traceback (most recent call last)")
        assert 'failing.py", line 12, in handle' in trace
        assert trace.endswith(f"ValueError: bad amount in b'{letter['value']}'")
    # with -v, every one (a new group reads the three records again)
    verbose = run_cli("run", "failing:app", "-v", "--group", unique("g"), "--until-idle", "2",
                      *GROUP_FLAGS, cluster=cluster, cwd=tmp_path)  # fmt: skip
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stderr.count("Traceback (most recent call last)") == 3


def test_an_import_error_points_at_the_users_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text('import os\n\nTOKEN = os.environ["NO_SUCH_TOKEN_X"]\n')
    proc = run_cli("-b", "127.0.0.1:1", "run", "broken:app", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "lagless: error: importing 'broken' raised KeyError: 'NO_SUCH_TOKEN_X' "
        "(broken.py, line 3)\n"
    )
