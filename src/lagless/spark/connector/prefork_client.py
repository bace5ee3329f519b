"""The launcher's client side of :mod:`lagless.spark.connector.prefork` (the standard library only).

Run as ``python -I -S prefork_client.py SOCKET PYTHON ARGS...`` in place of ``PYTHON ARGS...``:
it hands the server its stdin, stdout and stderr, its environment, working directory and
arguments; the server forks a warm child that runs them. This process stays as the one Spark
started: a signal it gets goes on to the child, and it exits with the child's status (or is
killed by the signal that killed the child). If the server cannot be reached, it says so on
stderr in one line and becomes ``PYTHON ARGS...`` itself (what Spark would have run).

Not a module of the package at run time: ``-I -S`` keeps the interpreter's start short (no
site-packages, no environment variables), so it imports nothing but the standard library.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from typing import Any, NoReturn

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def request(sock_path: str, args: list[str]) -> tuple[Any, int]:
    """Ask the server for a child running ``args``; (the reply stream, the child's pid)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock_path)
    message = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": args}
    socket.send_fds(conn, [json.dumps(message).encode() + b"\n"], [0, 1, 2])
    replies = conn.makefile("rb")
    pid = int(json.loads(replies.readline())["pid"])
    return replies, pid


def main(argv: list[str]) -> NoReturn:
    sock_path, python, args = argv[1], argv[2], argv[3:]
    try:
        replies, pid = request(sock_path, args)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(
            f"lagless: Spark's source runner starts in a fresh interpreter (slower): the fork "
            f"server at {sock_path} did not answer ({exc})",
            file=sys.stderr,
            flush=True,
        )
        os.execv(python, [python, *args])

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 - contextlib would lengthen this interpreter's start
            os.kill(pid, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    line = replies.readline()
    if not line:  # the server went away: the child's status is unknown
        forward(signal.SIGTERM, None)
        sys.exit(1)
    end(int(json.loads(line)["exit"]))


def end(status: int) -> NoReturn:
    """Exit as the child did: with its status, or killed by the same signal (-N)."""
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        sys.exit(128 - status)  # (a signal that does not end a process by default)
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv)
