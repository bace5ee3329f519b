"""``--scrape`` targets that are no lagless instance, over real sockets: one answering bytes that
are no HTTP, one closing inside its announced body, one that never answers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lagless.ui.scrape import Instances


@contextmanager
def serving(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on loopback that treats each connection with ``answer``: its address."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def run() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            conn.recv(4096)
            answer(conn)

    threading.Thread(target=run, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


def garbage(conn: socket.socket) -> None:
    conn.sendall(b"\x00\xff not http at all\r\n\r\n")
    conn.close()


def short_body(conn: socket.socket) -> None:
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"group": ')
    conn.close()


def silent(conn: socket.socket) -> None:
    del conn  # held open, never answered


def test_targets_that_answer_no_http_are_shown_failed_and_left_out(tmp_path: Path) -> None:
    with (
        serving(garbage) as bad,
        serving(short_body) as short,
        serving(silent) as hung,
        serving(silent) as hung2,
    ):
        instances = Instances(tmp_path, [bad, short, hung, hung2])
        began = time.monotonic()
        assert instances.look() == []
        took = time.monotonic() - began
        errors = instances.scrape_errors()
    assert sorted(errors) == sorted([bad, short, hung, hung2])
    assert "BadStatusLine" in errors[bad] and "IncompleteRead" in errors[short]
    assert "timed out" in errors[hung]
    assert took < 3.5  # the two hung targets waited for at once (2 s), not one after the other
