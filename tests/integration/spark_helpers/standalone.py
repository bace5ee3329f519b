"""A Spark standalone cluster (one master, one worker) from the pyspark distribution, on
127.0.0.1, for tests: ``with standalone_cluster(tmp_path) as master_url: ...``.

The master and the worker run ``bin/spark-class`` of the installed pyspark (the sbin/ start
scripts are not shipped in the wheel); each is started in its own process group and killed
with it (the worker's executors included).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from lagless.broker.embedded import free_port

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_CLASS), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"no {text!r} in {log} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)


@contextmanager
def standalone_cluster(directory: Path, cores: int = 2, memory: str = "2g") -> Iterator[str]:
    """Start a master and a worker; yield the master URL (spark://127.0.0.1:PORT)."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
    }
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master = _start(
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        directory / "master.log",
        env,
    )
    worker: subprocess.Popen[bytes] | None = None
    try:
        _wait_for(directory / "master.log", "I have been elected leader", master, 90)
        worker = _start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(directory / "work"),
            ],
            directory / "worker.log",
            env,
        )
        _wait_for(directory / "worker.log", "Successfully registered with master", worker, 90)
        yield url
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def python_without_lagless(directory: Path) -> Path:
    """A Python that has lagless's dependencies (those of this venv, through a ``.pth``
    line) but not lagless itself (this venv's editable install is a ``.pth`` file of its
    own, which a plain path line does not process): what a worker node has when lagless is
    not installed there."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "lagless-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python
