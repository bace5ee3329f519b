"""The console's HTTP server (standard library, a thread per request): pages, the JSON API,
``/metrics``, static assets, login and the guarded writes."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lagless.errors import LaglessError
from lagless.ui import api, pages, specs, writes
from lagless.ui.assets import asset_bytes
from lagless.ui.auth import COOKIE, Guard
from lagless.ui.console import Console
from lagless.ui.labruns import lab_file, lab_page
from lagless.ui.records import dead_letters_page

log = logging.getLogger(__name__)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}
MAX_FORM = 64 * 1024

Route = tuple[re.Pattern[str], str]
ROUTES: list[Route] = [
    (re.compile(r"^/$"), "overview"),
    (re.compile(r"^/group/([^/]+)$"), "group"),
    (re.compile(r"^/topic/([^/]+)$"), "topic"),
    (re.compile(r"^/lab$"), "lab"),
    (re.compile(r"^/lab/files/(.+)$"), "lab_file"),
    (re.compile(r"^/dead-letters$"), "dead_letters"),
    (re.compile(r"^/api/groups$"), "api_groups"),
    (re.compile(r"^/api/groups/([^/]+)$"), "api_group"),
    (re.compile(r"^/api/groups/([^/]+)/series$"), "api_series"),
    (re.compile(r"^/api/groups/([^/]+)/charts$"), "api_charts"),
    (re.compile(r"^/api/topics$"), "api_topics"),
    (re.compile(r"^/api/cluster$"), "api_cluster"),
    (re.compile(r"^/metrics$"), "metrics"),
    (re.compile(r"^/static/([A-Za-z0-9_./-]+)$"), "static"),
    (re.compile(r"^/favicon.ico$"), "favicon"),
]
POSTS: list[Route] = [
    (re.compile(r"^/login$"), "login"),
    (re.compile(r"^/group/([^/]+)/reset-offsets$"), "reset"),
    (re.compile(r"^/group/([^/]+)/delete$"), "delete_group"),
    (re.compile(r"^/topic/([^/]+)/delete$"), "delete_topic"),
]


class ReplyError(Exception):
    """Ends a request with ``status`` and a one-line message."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def make_handler(console: Console, guard: Guard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "lagless-ui"
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s - %s", self.address_string(), format % args)

        # plumbing

        def send(self, status: HTTPStatus, body: bytes, ctype: str,
                 headers: dict[str, str] | None = None) -> None:  # fmt: skip
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def html(self, body: str, status: HTTPStatus = HTTPStatus.OK) -> None:
            self.send(status, body.encode(), "text/html; charset=utf-8")

        def json(self, doc: Any, status: HTTPStatus = HTTPStatus.OK,
                 headers: dict[str, str] | None = None) -> None:  # fmt: skip
            body = json.dumps(doc, allow_nan=False).encode()
            self.send(status, body, "application/json", headers)

        def page(self, title: str, body: str, name: str, data: dict[str, Any] | None = None,
                 charts: bool = False, status: HTTPStatus = HTTPStatus.OK) -> None:  # fmt: skip
            self.html(pages.layout(title, body, csrf=guard.csrf, interval=console.config.interval,
                                   page=name, data=data, charts=charts), status)  # fmt: skip

        def query(self) -> dict[str, str]:
            return dict(parse_qsl(urlsplit(self.path).query))

        def api_path(self) -> bool:
            return urlsplit(self.path).path.startswith(("/api/", "/metrics"))

        def fail(self, status: HTTPStatus, message: str) -> None:
            if self.api_path() or (
                self.command == "POST" and "json" in self.headers.get("Accept", "")
            ):
                self.json({"error": message}, status)
            else:
                body = pages.message_page(status.phrase, message)
                self.page(str(status.phrase), body, "error", status=status)

        def dispatch(self, routes: list[Route], prefix: str) -> None:
            path = urlsplit(self.path).path
            try:
                for pattern, name in routes:
                    match = pattern.match(path)
                    if match:
                        args = [unquote(a) for a in match.groups()]
                        getattr(self, f"{prefix}_{name}")(*args)
                        return
                raise ReplyError(HTTPStatus.NOT_FOUND, f"no page at {path}")
            except ReplyError as exc:
                self.fail(exc.status, str(exc))
            except (LaglessError, ValueError) as exc:
                self.fail(HTTPStatus.BAD_REQUEST, str(exc))
            except BrokenPipeError:
                pass

        def authorized(self) -> bool:
            if guard.allowed(dict(self.headers.items())):
                return True
            if self.api_path():
                self.json({"error": "a token is needed"}, HTTPStatus.UNAUTHORIZED,
                          {"WWW-Authenticate": "Bearer"})  # fmt: skip
            else:
                self.html(pages.login_page(False), HTTPStatus.UNAUTHORIZED)
            return False

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path.startswith("/static/") or path == "/favicon.ico" or self.authorized():
                self.dispatch(ROUTES, "get")

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            try:
                form = self.form()
            except ReplyError as exc:
                self.fail(exc.status, str(exc))
                return
            if path == "/login":
                self.login(form)
                return
            if not self.authorized():
                return
            if not guard.allow_writes:
                self.fail(HTTPStatus.FORBIDDEN, "read-only console: start it with --allow-writes")
                return
            if not guard.csrf_ok(form.get("csrf") or self.headers.get("X-CSRF-Token")):
                self.fail(HTTPStatus.FORBIDDEN, "missing or wrong CSRF token")
                return
            self._form = form
            self.dispatch(POSTS, "post")

        def form(self) -> dict[str, str]:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise ReplyError(HTTPStatus.BAD_REQUEST, "bad Content-Length") from None
            if length > MAX_FORM:
                raise ReplyError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "form too large")
            raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            return dict(parse_qsl(raw))

        def login(self, form: dict[str, str]) -> None:
            if not guard.check_token(form.get("token", "")):
                self.html(pages.login_page(True), HTTPStatus.UNAUTHORIZED)
                return
            cookie = f"{COOKIE}={guard.session()}; HttpOnly; SameSite=Strict; Path=/"
            self.send(HTTPStatus.SEE_OTHER, b"", "text/plain",
                      {"Location": "/", "Set-Cookie": cookie})  # fmt: skip

        # pages

        def get_overview(self) -> None:
            query = self.query()
            offset, limit = api.paging({"limit": "100", **query})
            rows, total = api.groups(console, {**query, "offset": str(offset),
                                               "limit": str(limit)})  # fmt: skip
            body = pages.overview(rows, total, api.topics(console), offset, limit)
            self.page("overview", body, "overview", {"offset": offset, "limit": limit})

        def known_group(self, name: str) -> dict[str, Any]:
            doc = api.group(console, name, self.query())
            if doc is None:
                raise ReplyError(
                    HTTPStatus.NOT_FOUND, f"no group {name!r} (deleted, or not seen yet)"
                )
            return doc

        def get_group(self, name: str) -> None:
            doc = self.known_group(name)
            body = pages.group_page(doc, guard.csrf, guard.allow_writes)
            self.page(f"group {name}", body, "group", {"group": name}, charts=True)

        def get_topic(self, name: str) -> None:
            found = [t for t in console.latest.topics if t.topic == name]
            if not found:
                raise ReplyError(HTTPStatus.NOT_FOUND, f"no topic {name!r}")
            records, error = console.pages.latest(name)
            doc = {**found[0].to_json(), "ends": found[0].ends}
            body = pages.topic_page(doc, records, error, guard.csrf, guard.allow_writes)
            self.page(f"topic {name}", body, "topic", {"topic": name})

        def get_lab(self) -> None:
            self.page("lab", lab_page(console.config.lab_dir), "lab")

        def get_lab_file(self, rel: str) -> None:
            body, ctype = lab_file(console.config.lab_dir, rel)
            if body is None:
                raise ReplyError(HTTPStatus.NOT_FOUND, f"no file {rel!r} under the lab directory")
            self.send(HTTPStatus.OK, body, ctype)

        def get_dead_letters(self) -> None:
            body = dead_letters_page(console.pages, console.latest)
            self.page("dead letters", body, "dead-letters")

        def get_static(self, name: str) -> None:
            kind = STATIC_TYPES.get(name[name.rfind(".") :])
            try:
                body = asset_bytes(name) if kind and ".." not in name else None
            except (FileNotFoundError, IsADirectoryError):
                body = None
            if body is None or kind is None:
                raise ReplyError(HTTPStatus.NOT_FOUND, f"no asset {name!r}")
            self.send(HTTPStatus.OK, body, f"{kind}; charset=utf-8")

        def get_favicon(self) -> None:
            self.send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")

        # API

        def get_api_groups(self) -> None:
            rows, total = api.groups(console, self.query())
            self.json(rows, headers={"X-Total-Count": str(total)})

        def get_api_group(self, name: str) -> None:
            self.json(self.known_group(name))

        def get_api_series(self, name: str) -> None:
            self.known_group(name)
            self.json(api.series(console, name, self.query()))

        def get_api_charts(self, name: str) -> None:
            since, until = api.time_range(self.query())
            self.json(specs.group_charts(console, name, since, until))

        def get_api_topics(self) -> None:
            self.json(api.topics(console))

        def get_api_cluster(self) -> None:
            self.json(api.cluster(console))

        def get_metrics(self) -> None:
            self.send(HTTPStatus.OK, generate_latest(console.metrics), CONTENT_TYPE_LATEST)

        # writes (guarded in do_POST)

        def changed(self, result: tuple[str, str]) -> None:
            self.page(result[0], f"<h2>{pages.e(result[0])}</h2>{result[1]}", "write")

        def post_reset(self, group: str) -> None:
            self.changed(writes.reset_offsets(console.conf, group, self._form, guard.csrf))

        def post_delete_group(self, group: str) -> None:
            self.changed(writes.delete("group", console.conf, group, self._form, guard.csrf))

        def post_delete_topic(self, topic: str) -> None:
            self.changed(writes.delete("topic", console.conf, topic, self._form, guard.csrf))

    return Handler


class ConsoleServer:
    """Serves one console on ``host:port`` (threads); ``url`` is where it answers."""

    def __init__(self, console: Console, guard: Guard, host: str, port: int) -> None:
        try:
            self.httpd = ThreadingHTTPServer((host, port), make_handler(console, guard))
        except OSError as exc:
            raise LaglessError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
        self.httpd.daemon_threads = True
        bound = self.httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}/"
        self._thread: threading.Thread | None = None

    def start(self) -> ConsoleServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="lagless-ui",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


StopFn = Callable[[], None]
