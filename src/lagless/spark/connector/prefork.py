"""The ``lagless-kafka`` source's driver side, forked from a warm process.

Spark runs a Python stream source's driver side (initial and latest offsets, partitions,
commits) in a process of its own, started for every query as a fresh interpreter (``python -m
pyspark.sql.streaming.python_streaming_source_runner``; Spark does not fork it from its worker
daemon). Its start is on the query's path before the first trigger: importing Spark's runner
(pyspark, pyarrow, numpy) and then lagless, ~0.9 CPU-s measured on the benchmark's 2-core
machine, 0.6-0.9 s of wall time per query.

For local masters, where lagless chooses Spark's Python itself, :func:`spark_python` returns a
launcher script in front of this interpreter instead of the interpreter. The launcher runs every
Python process Spark starts as before, except the source runner: that one is forked from a
server started with the session (``python -m lagless.spark.connector.prefork SOCKET``), which
imported the
runner's modules once. The launcher's client (:mod:`lagless.spark.connector.prefork_client`) hands
the
server its stdin, stdout and stderr (the pipes Spark reads), its environment (the one Spark
set: the connection back to the JVM, ``PYTHONPATH``...), working directory and arguments; the
child takes them over and runs the runner as ``__main__``; its exit status is the launcher's.

Falls back to a fresh interpreter, as Spark would start, when the server is not listening
(still importing, exited, or ``LAGLESS_SPARK_PREFORK=0``). A user's own ``spark.pyspark.python``
and cluster masters are left alone. The server lives as long as this process (it exits when
the pipe to it closes); a child whose launcher is gone is sent SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import logging
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lagless.switches import switched_on

log = logging.getLogger(__name__)

RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"
# What the runner imports, then what it unpickles (the data source and its reader).
WARM = (RUNNER, "lagless.spark.connector.datasource", "lagless.spark.connector.source")
SWITCH = "LAGLESS_SPARK_PREFORK"
OWNS_DIRECTORY = "--owns-directory"
MAX_REQUEST = 4 * 1024 * 1024  # bytes of one request (the environment is most of it)

LAUNCHER = """#!/bin/sh
# lagless: Spark's Python for this session (lagless.spark.connector.prefork). Spark's stream source
# runner is forked from a warm server; everything else runs the interpreter as is.
if [ "$1" = "-m" ] && [ "$2" = {runner} ]; then
  exec {python} -I -S {client} {sock} {python} "$@"
fi
exec {python} "$@"
"""


def enabled() -> bool:
    return switched_on(SWITCH, "fork Spark's source runner")


@dataclass
class Server:
    """This process's server and launcher (one per driver process)."""

    python: str
    directory: Path
    process: subprocess.Popen[bytes]

    @property
    def launcher(self) -> Path:
        return self.directory / "python"

    @property
    def socket_path(self) -> Path:
        return self.directory / "runner.sock"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()  # the server exits when its stdin closes
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class _Current:
    """This process's server, if started."""

    lock = threading.Lock()
    server: Server | None = None


def spark_python(python: str) -> str:
    """The Python path Spark should run for a local master: the launcher in front of
    ``python`` (its server started once per process, again if it exited), or ``python``
    itself when ``LAGLESS_SPARK_PREFORK=0``."""
    if not enabled():
        return python
    with _Current.lock:
        server = _Current.server
        if server is not None and (server.python != python or not server.alive()):
            if not server.alive():
                log.warning("the source runner's fork server exited: starting it again")
            server.stop()
            server = None
        if server is None:
            server = _Current.server = start(python)
            atexit.register(server.stop)
        return str(server.launcher)


def start(python: str) -> Server:
    directory = Path(tempfile.mkdtemp(prefix="lagless-prefork-"))  # private: mode 0700
    process = subprocess.Popen(
        [python, "-m", __name__, str(directory / "runner.sock"), OWNS_DIRECTORY],
        stdin=subprocess.PIPE,
        start_new_session=True,  # not in the terminal's group: Ctrl-C is the driver's
    )
    server = Server(python, directory, process)
    client = Path(__file__).with_name("prefork_client.py")
    server.launcher.write_text(
        LAUNCHER.format(
            runner=shlex.quote(RUNNER),
            python=shlex.quote(python),
            client=shlex.quote(str(client)),
            sock=shlex.quote(str(server.socket_path)),
        )
    )
    server.launcher.chmod(0o700)
    return server


# ---- the server process ----


def serve(sock_path: str, owns_directory: bool = False) -> None:
    """Import the runner's modules, then fork a child for each launcher that connects, until
    stdin closes (the driver is gone); then remove the socket's directory if it is the
    server's own, so a driver killed with SIGKILL leaves nothing behind. A server that cannot
    fork safely does not listen (launchers run the interpreter) and still waits for its
    driver: the launcher lives in that directory."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if warm_up():
        _serve(sock_path)
    else:
        while not _driver_gone():
            pass
    if owns_directory:
        shutil.rmtree(os.path.dirname(sock_path), ignore_errors=True)


def warm_up() -> bool:
    """Import what the runner imports; whether this process may fork (single-threaded)."""
    # numpy's BLAS and pyarrow's jemalloc would start threads of their own on import
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    try:
        for name in WARM:
            importlib.import_module(name)
    except Exception as e:  # Spark's runner will say it again, in the query's error
        log.warning("the source runner's fork server cannot import its modules: %s", e)
        return False
    threads = _threads()
    if threads > 1:
        log.warning(
            "the source runner's fork server has %d threads after its imports: not forking "
            "(Spark starts the runner as a fresh interpreter)",
            threads,
        )
        return False
    return True


def _serve(sock_path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{sock_path}.{os.getpid()}"
    listener.bind(partial)
    listener.listen(64)
    os.replace(partial, sock_path)  # listening once the path exists
    children: dict[int, socket.socket | None] = {}  # None: its launcher is gone
    while True:
        waiting = [listener, sys.stdin, *filter(None, children.values())]
        readable, _, _ = select.select(waiting, [], [], 0.2)
        _reap(children)
        if sys.stdin in readable and _driver_gone():
            return
        for conn in readable:
            if conn is listener:
                _accept(listener, children)
            elif isinstance(conn, socket.socket) and not conn.recv(1):
                _launcher_gone(conn, children)


def _driver_gone() -> bool:
    """Read what the driver's pipe holds (nothing is ever sent): whether it closed."""
    return not os.read(sys.stdin.fileno(), 4096)


def _threads() -> int:
    """Threads of this process (1 where ``/proc`` is not there to ask)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _accept(listener: socket.socket, children: dict[int, socket.socket | None]) -> None:
    conn, _ = listener.accept()
    conn.settimeout(5)
    fds: list[int] = []
    try:
        request, fds = _read_request(conn)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            conn.close()
            _run_child(request, fds)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        children[pid] = conn
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("the source runner's fork server refused a request: %s", e)
        conn.close()
    finally:
        for fd in fds:
            os.close(fd)


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    fds = list(fds)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 16)
        if not more or len(data) > MAX_REQUEST:
            raise ValueError("incomplete request")
        data += more
    request = json.loads(data)
    if len(fds) != 3 or not isinstance(request.get("env"), dict):
        raise ValueError("a request carries stdin, stdout, stderr and the environment")
    return request, fds


def _run_child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the process the launcher was asked to be."""
    import runpy

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        argv = request["argv"]
        if argv[:2] != ["-m", RUNNER]:
            raise ValueError(f"not the source runner: {argv[:2]}")
        sys.argv = [RUNNER, *argv[2:]]
        sys.modules.pop(RUNNER, None)  # imported to warm up; now run afresh as __main__
        try:
            runpy.run_module(RUNNER, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # the child reports and exits whatever happens
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code & 0xFF)


def _reap(children: dict[int, socket.socket | None]) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            conn = children.pop(pid)
            if conn is None:
                continue
            try:
                # an exit status, or -N for a child killed by signal N (the launcher then
                # ends by the same signal)
                exit_code = os.waitstatus_to_exitcode(status)
                conn.sendall(json.dumps({"exit": exit_code}).encode() + b"\n")
            except OSError:
                pass
            conn.close()


def _launcher_gone(conn: socket.socket, children: dict[int, socket.socket | None]) -> None:
    """The launcher Spark started was killed: its child goes too."""
    for pid, c in list(children.items()):
        if c is conn:
            children[pid] = None
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
    conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], owns_directory=OWNS_DIRECTORY in sys.argv[2:])
