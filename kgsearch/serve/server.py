"""``kgsearch serve``: the web pages and the JSON API over HTTP, standard library only.

:class:`App` answers one request (method, path, parameters, headers) with (status, headers,
body) and knows nothing of sockets, so tests call it directly; :func:`make_server` puts it behind
a :class:`http.server.ThreadingHTTPServer` with bounds:

- at most ``MAX_THREADS`` requests are worked on at once (more wait in the listen queue);
- a request line longer than ``MAX_URL`` is 414, a body larger than ``MAX_BODY`` 413, a client
  that sends nothing for ``SOCKET_TIMEOUT`` seconds is dropped;
- the index is used by one request at a time, each stopped after ``limit`` seconds (503);
- only the routes below exist: any other path is 404 (no file is ever served from disk);
- bound to a loopback address, requests naming another host (``Host:``) are refused (403): a web
  page elsewhere cannot reach the server through DNS rebinding.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ..errors import BadIndex, DataError, KgsearchError, NotFound, UsageError
from ..lines import quoted
from . import api, pages
from .holder import Busy, Holder
from .html import CSS

__all__ = ["App", "make_server", "LOOPBACK"]

log = logging.getLogger(__name__)

MAX_URL = 16_384
MAX_BODY = 1_000_000
MAX_THREADS = 32
SOCKET_TIMEOUT = 30.0
LOOPBACK = ("127.0.0.1", "::1", "localhost")
CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Content-Security-Policy": CSP, "X-Frame-Options": "DENY"}


def _status_of(exc: Exception) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, (UsageError, DataError)):
        return 400
    if isinstance(exc, (Busy, BadIndex)):
        return 503
    return 500


class App:
    """The routes. ``holders``: the indexes by name (the first is the default)."""

    def __init__(self, holders: dict[str, Holder], allowed_hosts: set[str] | None = None):
        self.holders = holders
        self.default = next(iter(holders))
        self.allowed_hosts = allowed_hosts

    @contextmanager
    def engine(self, params: dict, every: bool = False):
        """The engine of the index ``db=NAME`` names (default: the first); with ``every`` and no
        ``db``, the indexes searched as one (:class:`~kgsearch.query.multi.MultiEngine`), each
        locked in turn, always in the same order."""
        if not every or len(self.holders) == 1 or api.param(params, "db") is not None:
            with self.holder(params).use() as eng:
                yield eng
            return
        from ..query.multi import MultiEngine

        with ExitStack() as stack:
            engines = {name: stack.enter_context(h.use()) for name, h in self.holders.items()}
            yield MultiEngine(engines, threads=False)

    def holder(self, params: dict) -> Holder:
        name = api.param(params, "db")
        if name is None:
            return self.holders[self.default]
        h = self.holders.get(name)
        if h is None:
            raise NotFound(f"no index named {quoted(name[:80])} here; the indexes: {', '.join(self.holders)}")
        return h

    # ------------------------------------------------------------------ one request
    def handle(self, method: str, target: str, headers: dict, body: bytes = b"") -> tuple[int, dict, bytes]:
        host = (headers.get("host") or headers.get("Host") or "").strip()
        if self.allowed_hosts is not None and _hostname(host) not in self.allowed_hosts:
            return self._error(403, f"unexpected Host {quoted(host[:80])}: this server answers requests to "
                                    f"{', '.join(sorted(h for h in self.allowed_hosts if h))} only", False)
        parts = urlsplit(target)
        path = parts.path
        params = parse_qs(parts.query, keep_blank_values=True)
        if method == "POST":
            try:
                params.update(_form(headers, body))
            except UsageError as exc:
                return self._error(400, str(exc), path.startswith("/api/"))
        if method not in ("GET", "HEAD", "POST"):
            return self._error(405, f"method {method} is not allowed", path.startswith("/api/"))
        if method == "POST" and path not in ("/context", "/api/context", "/api/search", "/api/why"):
            return self._error(405, "POST is only for /context and the /api/ endpoints that take long text", False)
        try:
            if path in api.ENDPOINTS:
                fn = api.ENDPOINTS[path]
                api.check_names(path, params)
                # why over several indexes ranks over all of them; its db names the node's index
                every = path in ("/api/search", "/api/context", "/api/why")
                with self.engine({k: v for k, v in params.items() if k != "db"} if path == "/api/why" else params,
                                 every=every) as eng:
                    return 200, {"Content-Type": "application/json; charset=utf-8"}, api.dumps(fn(eng, params))
            if path == "/":
                return self._search(params)
            if path == "/node":
                return self._node(params)
            if path == "/context":
                return self._context(params)
            if path == "/stats":
                with self.holder(params).use() as eng:
                    return self._html(pages.stats_page(api.api_stats(eng, params)))
            if path == "/style.css":
                return 200, {"Content-Type": "text/css; charset=utf-8", "Cache-Control": "max-age=3600"}, CSS.encode()
            if path == "/favicon.ico":
                return 204, {}, b""
        except KgsearchError as exc:
            return self._error(_status_of(exc), str(exc), path.startswith("/api/"))
        except sqlite3.DatabaseError as exc:     # a file damaged (or a disk gone) while served: 503 naming it
            mapped = self._index_error(exc, params)
            if mapped is None:
                log.exception("internal error on %s", path)
                return self._error(500, f"internal error {type(exc).__name__}: {exc}", path.startswith("/api/"))
            return self._error(503, str(mapped), path.startswith("/api/"))
        except Exception as exc:                # a bug: one line to the client, the traceback to the log
            log.exception("internal error on %s", path)
            return self._error(500, f"internal error {type(exc).__name__}: {exc}", path.startswith("/api/"))
        return self._error(404, f"no page {quoted(path[:200])} here", path.startswith("/api/"))

    def _index_error(self, exc: Exception, params: dict):
        """A sqlite error as the :class:`~kgsearch.errors.BadIndex` naming its file: the one found
        damaged among the server's indexes (the error itself names none)."""
        from ..store.damage import ensure_error

        return ensure_error(exc, [h.db for h in self.holders.values()])

    # ------------------------------------------------------------------ pages
    @staticmethod
    def _html(body: bytes, status: int = 200) -> tuple[int, dict, bytes]:
        return status, {"Content-Type": "text/html; charset=utf-8"}, body

    def _error(self, status: int, message: str, as_json: bool) -> tuple[int, dict, bytes]:
        if as_json:
            return status, {"Content-Type": "application/json; charset=utf-8"}, api.dumps({"error": message,
                                                                                          "status": status})
        return self._html(pages.error_page(status, message), status)

    def _search(self, params: dict):
        if api.blank(api.param(params, "q") or ""):
            return self._html(pages.search_page(params))
        try:
            with self.engine(params, every=True) as eng:
                resp = api.api_search(eng, params)
        except (UsageError, DataError, Busy) as exc:
            return self._html(pages.search_page(params, error=str(exc)), _status_of(exc))
        return self._html(pages.search_page(params, resp))

    def _node(self, params: dict):
        from ..stats import related_nodes

        with self.holder(params).use() as eng:
            shown = api.api_show(eng, params)
            rel = related_nodes(eng.ix, shown["node"]["key"], limit=200)
        return self._html(pages.node_page(shown, rel, api.param(params, "db")))

    def _context(self, params: dict):
        if api.param(params, "task") is None and not params.get("files"):
            return self._html(pages.context_page(params))
        try:
            with self.engine(params, every=True) as eng:
                res = api.context_result(eng, params, "markdown")
        except (UsageError, DataError, NotFound, Busy) as exc:
            return self._html(pages.context_page(params, error=str(exc)), _status_of(exc))
        return self._html(pages.context_page(params, res))


def _hostname(host: str) -> str:
    """``Host:`` without its port (``[::1]:8000`` -> ``::1``)."""
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _form(headers: dict, body: bytes) -> dict:
    ctype = (headers.get("content-type") or headers.get("Content-Type") or "").split(";")[0].strip().lower()
    text = body.decode("utf-8", errors="replace")
    if ctype == "application/json":
        try:
            obj = json.loads(text or "{}")
        except ValueError:
            raise UsageError("the request body is not valid JSON") from None
        except RecursionError:                  # '[' * 100000: one line, not a dead request
            raise UsageError("the request body is JSON nested too deeply; send an object of parameters") from None
        if not isinstance(obj, dict):
            raise UsageError("the request body must be a JSON object of parameters")
        for k, v in obj.items():                # an object is no parameter value (it searched for "{'a': 1}")
            if isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v)):
                raise UsageError(f"parameter {quoted(str(k)[:40])} must be a string, a number or a list of them, "
                                 f"got a JSON {'object' if isinstance(v, dict) else 'list of lists or objects'}")
        # null (a client's "not set") is a parameter not given, never the text "None"
        return {k: [str(x) for x in v if x is not None] if isinstance(v, list) else [str(v)]
                for k, v in obj.items() if v is not None}
    return parse_qs(text, keep_blank_values=True)


# ---------------------------------------------------------------------------------- HTTP
class _Handler(BaseHTTPRequestHandler):
    server_version = "kgsearch"
    sys_version = ""
    timeout = SOCKET_TIMEOUT

    def _serve(self, method: str) -> None:
        if len(self.path) > MAX_URL:
            self._send(414, {"Content-Type": "text/plain; charset=utf-8"}, b"request line too long\n")
            return
        body = b""
        if method == "POST":
            try:
                n = api.ascii_int(self.headers.get("Content-Length") or "0")
            except ValueError:
                n = -1
            if n < 0 or n > MAX_BODY:
                self._send(413, {"Content-Type": "text/plain; charset=utf-8"},
                           f"request body missing a length or over {MAX_BODY:,} bytes\n".encode())
                return
            body = self.rfile.read(n)
        status, headers, payload = self.server.app.handle(method, self.path, self.headers, body)
        self._send(status, headers, b"" if method == "HEAD" else payload, len(payload))

    def _send(self, status: int, headers: dict, payload: bytes, length: int | None = None) -> None:
        self.send_response(status)
        for k, v in {**HEADERS, **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload) if length is None else length))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self._serve("GET")

    def do_HEAD(self):
        self._serve("HEAD")

    def do_POST(self):
        self._serve("POST")

    def _refuse(self):
        self._send(405, {"Content-Type": "text/plain; charset=utf-8"}, b"method not allowed\n")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def log_message(self, fmt, *args):
        self.server.log_request_line(self.address_string(), fmt % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, addr, app: App, on_request=None):
        self.app = app
        self.on_request = on_request
        self._slots = threading.BoundedSemaphore(MAX_THREADS)
        if ":" in addr[0]:
            import socket

            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)

    def process_request(self, request, client_address):
        self._slots.acquire()                  # at most MAX_THREADS at work; the rest wait in the queue
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def log_request_line(self, who: str, line: str) -> None:
        if self.on_request is not None:
            self.on_request(who, line)


def make_server(holders: dict[str, Holder], host: str = "127.0.0.1", port: int = 8765, on_request=None) -> _Server:
    """A server bound to ``host:port`` (port 0: any free port; ``server.server_address`` says which).
    Call ``serve_forever()`` on it and ``shutdown()`` from another thread to stop."""
    allowed = None
    if host in LOOPBACK:
        allowed = {"127.0.0.1", "localhost", "::1", ""}      # "": an HTTP/1.0 client without Host (no browser)
    return _Server((host, port), App(holders, allowed), on_request)
