"""A Spark standalone cluster (one master, one worker) from the pyspark distribution, on
127.0.0.1, for tests: ``with standalone_cluster(tmp_path) as master_url: ...``.

The master and the worker run ``bin/spark-class`` of the installed pyspark (the sbin/ start
scripts are not shipped in the wheel); each is started in its own process group and killed
with it (the worker's executors included).

Executor Pythons without lagless: :func:`python_without_lagless` (this venv's packages
through a path line) and :func:`packed_env` (a venv-pack archive holding copies of the
packages the executors import, for ``spark.archives``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import distribution
from pathlib import Path

import pyspark
from packaging.requirements import Requirement

from lagless.broker.embedded import free_port

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
VENV_PACK = Path(sys.executable).parent / "venv-pack"


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


PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _new_venv(directory: Path) -> Path:
    """A venv without pip from this interpreter's base Python: its site-packages."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(directory)], check=True)
    return Path(
        subprocess.run(
            [str(directory / "bin" / "python"), "-c", PURELIB],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )


def python_without_lagless(directory: Path) -> Path:
    """A Python that has lagless's dependencies (those of this venv, through a ``.pth``
    line) but not lagless itself (this venv's editable install is a ``.pth`` file of its
    own, which a plain path line does not process): what a worker node has when lagless is
    not installed there."""
    purelib = _new_venv(directory)
    (purelib / "lagless-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return directory / "bin" / "python"


# What lagless's code on the executors imports (measured on the pipeline: pyarrow and numpy
# for the source's Arrow batches, pandas for Spark's Arrow UDF path, confluent_kafka for the
# reads and the DLQ writes); pydantic, typer, rich... stay on the driver.
EXECUTOR_PACKAGES = ("pyarrow", "pandas", "confluent-kafka")

# A module of the packed environment, loaded at every interpreter start (through a .pth
# line) when LAGLESS_PROBE_DIR is set: it writes one JSON line per process (sys.prefix, its
# working directory) and the file each of lagless and pyspark was imported from.
PROBE = """\
import importlib.machinery, json, os, sys

_DIR = os.environ.get("LAGLESS_PROBE_DIR")


def _note(**fields):
    fields.update(pid=os.getpid(), prefix=sys.prefix, cwd=os.getcwd())
    with open(os.path.join(_DIR, "%d.jsonl" % os.getpid()), "a") as out:
        out.write(json.dumps(fields) + "\\n")


class _Probe:
    def find_spec(self, name, path=None, target=None):
        if name not in ("lagless", "pyspark"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        _note(module=name, origin=spec.origin if spec else None)
        return spec


if _DIR:
    _note(module=None, origin=None)
    sys.meta_path.insert(0, _Probe())
"""


def _closure(names: tuple[str, ...]) -> list[str]:
    """``names`` and the distributions they require (markers evaluated, no extras)."""
    seen: dict[str, None] = {}
    todo = list(names)
    while todo:
        name = distribution(todo.pop()).metadata["Name"]
        if name.lower() in (n.lower() for n in seen):
            continue
        seen[name] = None
        for line in distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen)


def packed_env(directory: Path, probe: bool = True) -> tuple[Path, list[str]]:
    """``directory/env.tar.gz``, packed by venv-pack from a venv holding copies of
    :data:`EXECUTOR_PACKAGES` and their requirements (taken from this venv's installed
    files: what ``pip install`` would put there, without a download), with neither lagless
    nor pyspark; the probe module when ``probe``. Returns the archive and the distributions.

    The venv's ``bin/python`` links to this machine's base interpreter (venv-pack packs the
    packages, not Python): the workers need that interpreter at the same path, as they
    would with any venv-pack archive."""
    env = directory / "env"
    purelib = _new_venv(env)
    names = _closure(EXECUTOR_PACKAGES)
    for name in names:
        dist = distribution(name)
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            if "__pycache__" in file.parts or not source.is_file():
                continue
            target = purelib / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    if probe:
        (purelib / "lagless_probe.py").write_text(PROBE)
        (purelib / "lagless-probe.pth").write_text("import lagless_probe\n")
    archive = directory / "env.tar.gz"
    subprocess.run(
        [str(VENV_PACK), "-p", str(env), "-o", str(archive), "--compress-level", "1", "-q"],
        check=True,
    )
    return archive, names


def probe_notes(directory: Path) -> list[dict[str, str | None]]:
    """The probe's lines, every process's."""
    return [
        json.loads(line)
        for file in sorted(directory.glob("*.jsonl"))
        for line in file.read_text().splitlines()
    ]
