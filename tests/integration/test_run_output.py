"""`lagless run` as a developer meets it: Ctrl-C while it starts, what it prints."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import LAGLESS

pytestmark = pytest.mark.integration

APP = (
    "import lagless\napp = lagless.App(group='g')\n"
    "@app.handler('t', on_failure='skip')\ndef h(value): ...\n"
)


@pytest.mark.parametrize("after", [0.3, 2.5])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path, after: float) -> None:
    """Interrupted while importing (0.3 s) or while waiting for an unreachable cluster."""
    (tmp_path / "service.py").write_text(APP)
    proc = subprocess.Popen(
        [LAGLESS, "-b", "127.0.0.1:1", "run", "service:app"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err == "lagless: interrupted\n" and out == ""
