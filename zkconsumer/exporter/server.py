"""The exporter's HTTP side: /metrics and /v1/... on a ThreadingHTTPServer: bounded connections and reads, HEAD, one named thread, a bounded stop.

The standard library's server, kept: what the exporter needs of a server beyond it (a read
timeout, a cap on connections, one log line per client that hangs up) is a few lines here, while
a third-party server (waitress, cheroot) would be a new dependency of every install for the same.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from zkconsumer.zookeeper.client import run_bounded

log = logging.getLogger(__name__)


class Negotiated(Protocol):
    """A body that depends on whether the request accepts gzip (exposition.ScrapeBody)."""

    def negotiate(self, gzip: bool) -> tuple[str | None, int, Iterable[bytes]]: ...


Body = bytes | tuple[bytes, ...] | Negotiated  # a body in parts is written part by part, never joined
Route = Callable[[str], "tuple[int, str, Body] | None"]  # path -> (status, content type, body), None: 404


READ_TIMEOUT_S = 10.0  # a client silent this long (half-open, idle keep-alive) is dropped
MAX_CONNECTIONS = 64  # connections served at once; one more is answered 503 and closed
HUNG_UP = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, TimeoutError)


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header allows gzip (RFC 9110 12.5.3): listed with q > 0, or
    not listed while `*` is with q > 0. "gzip;q=0" refuses it."""
    star: float | None = None
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0  # unreadable: not an acceptance
        coding = name.strip().lower()
        if coding in ("gzip", "x-gzip"):
            return q > 0
        if coding == "*":
            star = q
    return star is not None and star > 0


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer(with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._answer(with_body=False)

    def _answer(self, with_body: bool) -> None:
        try:
            found = self.server.route(self.path)
        except Exception as exc:  # noqa: BLE001 - a bad page is a 500 naming the error, never a dead server
            log.exception("GET %s failed", self.path)
            found = 500, "text/plain; charset=utf-8", f"GET {self.path} failed: {exc!r}\n".encode()
        if found is None:
            found = 404, "text/plain; charset=utf-8", f"no such page: {self.path}\n".encode()
        status, content_type, body = found
        encoding: str | None = None
        if isinstance(body, bytes | tuple):
            parts: Iterable[bytes] = (body,) if isinstance(body, bytes) else body
            length = sum(len(part) for part in parts)
        else:
            encoding, length, parts = body.negotiate(accepts_gzip(self.headers.get("Accept-Encoding", "")))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if encoding is not None:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if with_body:
            for part in parts:
                self.wfile.write(part)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a request thread never holds up the process's exit
    route: Route
    slots: threading.BoundedSemaphore

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        """A thread per connection while there are slots; past the cap, a 503 at once, no thread."""
        if not self.slots.acquire(blocking=False):
            log.warning("%s: turned away, %d connections are served already", client_address, self.max_connections)
            try:
                request.settimeout(1.0)
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                    b"Connection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n"
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    @property
    def max_connections(self) -> int:
        return self._max_connections

    @max_connections.setter
    def max_connections(self, value: int) -> None:
        self._max_connections = value
        self.slots = threading.BoundedSemaphore(value)

    def handle_error(self, request: object, client_address: object) -> None:
        """One line per failed connection, instead of socketserver's traceback on stderr."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (*HUNG_UP, socket.timeout)):
            log.info("%s hung up or went silent: %s", client_address, exc)
        else:
            log.warning("%s: connection failed: %r", client_address, exc)


class HttpServer:
    """Serves `route` on host:port from a thread named "zkconsumer-exporter-http" (port 0: any free
    port; `port` says which after `start`).

    Example::

        server = HttpServer("127.0.0.1", 9308, lambda path: (200, "text/plain", b"ok"))
        server.start(); ...; server.stop(timeout_s=5)
    """

    def __init__(
        self,
        host: str,
        port: int,
        route: Route,
        *,
        read_timeout_s: float = READ_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        # StreamRequestHandler puts its class's `timeout` on each connection's socket
        handler = type("_TimedHandler", (_Handler,), {"timeout": read_timeout_s})
        self._server = _Server((host, port), handler, bind_and_activate=True)
        self._server.route = route
        self._server.max_connections = max_connections
        self._thread = threading.Thread(target=self._serve, name="zkconsumer-exporter-http", daemon=True)
        self.error: BaseException | None = None  # why serving ended early, if it did

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._server.serve_forever(poll_interval=0.2)
        except BaseException as exc:  # noqa: BLE001 - kept for the owner: stop() and alive() report it
            self.error = exc
            log.exception("the exporter's HTTP server stopped")

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float) -> bool:
        """Stop serving and close the socket; False if the serving thread had not ended within `timeout_s`."""
        if self._thread.ident is None:  # never started: shutdown() would wait for a loop that never ran
            self._server.server_close()
            return True
        stopped = run_bounded(self._server.shutdown, timeout_s, "zkconsumer-exporter-http-shutdown")
        self._server.server_close()
        self._thread.join(timeout_s)
        return stopped and not self._thread.is_alive()
