"""The exporter's HTTP side: /metrics and /v1/... on a ThreadingHTTPServer, with one named thread and a bounded stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from zkconsumer.zookeeper.client import run_bounded

log = logging.getLogger(__name__)


class Negotiated(Protocol):
    """A body that depends on the request's Accept-Encoding (exposition.ScrapeBody)."""

    def negotiate(self, accept_encoding: str) -> tuple[str | None, int, Iterable[bytes]]: ...


Body = bytes | tuple[bytes, ...] | Negotiated  # a body in parts is written part by part, never joined
Route = Callable[[str], "tuple[int, str, Body] | None"]  # path -> (status, content type, body), None: 404


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
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
            encoding, length, parts = body.negotiate(self.headers.get("Accept-Encoding", ""))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if encoding is not None:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        for part in parts:
            self.wfile.write(part)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a request thread never holds up the process's exit
    route: Route


class HttpServer:
    """Serves `route` on host:port from a thread named "zkconsumer-exporter-http" (port 0: any free
    port; `port` says which after `start`).

    Example::

        server = HttpServer("127.0.0.1", 9308, lambda path: (200, "text/plain", b"ok"))
        server.start(); ...; server.stop(timeout_s=5)
    """

    def __init__(self, host: str, port: int, route: Route) -> None:
        self._server = _Server((host, port), _Handler, bind_and_activate=True)
        self._server.route = route
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
