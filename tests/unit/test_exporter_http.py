"""The exporter's HTTP server on a real socket: HEAD, Accept-Encoding with q-values, read timeouts, a cap on connections, hang-ups in one line."""

from __future__ import annotations

import http.client
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from zkconsumer.exporter.exposition import Exposition
from zkconsumer.exporter.server import HttpServer, accepts_gzip

LINES = [f'zkconsumer_partition_lag{{group="g",topic="t",partition="{p}"}} {p}.0\n'.encode() for p in range(5000)]
RENDERED = Exposition(iter(LINES))


def route(path: str) -> tuple[int, str, object]:
    if path == "/big":
        return 200, "text/plain", b"x" * (16 << 20)
    return 200, "text/plain", RENDERED.with_tail(b"# end\n")


@pytest.fixture
def server() -> Iterator[HttpServer]:
    served = HttpServer("127.0.0.1", 0, route, read_timeout_s=0.5, max_connections=4)  # type: ignore[arg-type]
    served.start()
    yield served
    assert served.stop(10)


def ask(server: HttpServer, method: str, headers: dict[str, str]) -> tuple[http.client.HTTPResponse, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(method, "/metrics", headers=headers)
    answer = connection.getresponse()
    body = answer.read()
    connection.close()
    return answer, body


def test_head_answers_the_headers_without_a_body(server: HttpServer) -> None:
    answer, body = ask(server, "HEAD", {"Accept-Encoding": "gzip"})
    assert answer.status == 200 and body == b""
    get, got = ask(server, "GET", {"Accept-Encoding": "gzip"})
    assert answer.getheader("Content-Length") == get.getheader("Content-Length") == str(len(got))


@pytest.mark.parametrize(
    ("accept", "gzipped"),
    [
        ("gzip", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0, identity", False),
        ("identity;q=1, gzip;q=0.5", True),
        ("*", True),
        ("*;q=0", False),
        ("br, *;q=0.1", True),
        ("gzip;q=0, *", False),
        ("", False),
    ],
)
def test_accept_encoding_is_read_with_its_q_values(server: HttpServer, accept: str, gzipped: bool) -> None:
    assert accepts_gzip(accept) is gzipped
    answer, _body = ask(server, "GET", {"Accept-Encoding": accept})
    assert (answer.getheader("Content-Encoding") == "gzip") is gzipped


def test_silent_connections_are_dropped_and_capped(server: HttpServer) -> None:
    """300 half-open connections held 300 threads: now 4 at most, each dropped after its read timeout."""
    before = threading.active_count()
    silent = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(4)]
    time.sleep(0.2)
    extra = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    assert extra.recv(100).startswith(b"HTTP/1.1 503")  # over the cap: told at once, no thread
    assert threading.active_count() - before <= 4
    for held in silent:  # each closed by the server after 0.5 s of silence
        assert held.recv(100) == b""
    answer, _body = ask(server, "GET", {})  # and the slots are free again
    assert answer.status == 200
    for held in [*silent, extra]:
        held.close()


def test_a_client_that_hangs_up_is_one_log_line(
    server: HttpServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="zkconsumer.exporter.server")
    client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    client.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    client.recv(1024)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    client.close()
    deadline = time.monotonic() + 5
    while not any("hung up" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0].getMessage() and lines[0].exc_info is None
    assert "Traceback" not in capfd.readouterr().err
