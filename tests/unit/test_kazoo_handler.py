"""poll_select keeps select.select's contract, a kazoo client runs on PollHandler, and the handler
reads the session timeout the server granted off each handshake."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest
from kazoo.handlers.threading import SequentialThreadingHandler

from zkconsumer.clock import lease_clock
from zkconsumer.zookeeper.handler import HandshakeSocket, PollHandler, make_handler, poll_select


def test_ready_objects_are_returned_as_given() -> None:
    a, b = socket.socketpair()
    try:
        assert poll_select([a], [], [], 0) == ([], [], [])
        assert poll_select([a], [a], [], 0) == ([], [a], [])  # an empty socket buffer is writable
        b.sendall(b"x")
        readable, writable, errors = poll_select([a, b.fileno()], [], [], 1.0)
        assert readable == [a] and writable == [] and errors == []
    finally:
        a.close()
        b.close()


def test_a_closed_peer_reads_as_ready() -> None:
    a, b = socket.socketpair()
    b.close()
    try:
        assert poll_select([a], [], [], 1.0)[0] == [a]  # the read then returns b"" (EOF)
        assert a.recv(1) == b""
    finally:
        a.close()


def test_timeout_waits_and_rejects_negative() -> None:
    a, b = socket.socketpair()
    try:
        import time

        began = time.monotonic()
        assert poll_select([a], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - began >= 0.04
        with pytest.raises(ValueError):
            poll_select([a], [], [], -1)
    finally:
        a.close()
        b.close()


def test_handler_uses_it() -> None:
    handler = make_handler()
    assert isinstance(handler, PollHandler)
    a, b = socket.socketpair()
    try:
        b.sendall(b"y")
        assert handler.select([a], [], [], 1.0)[0] == [a]
    finally:
        a.close()
        b.close()


# ---- the session timeout the server granted, read off the handshake ---------------------------------


def _connect_response(timeout_ms: int, session_id: int = 0x1234, passwd: bytes = b"p" * 16) -> bytes:
    """ZooKeeper's ConnectResponse as it goes on the wire: length, then protocolVersion, timeOut,
    sessionId, passwd (a buffer: its length first), readOnly."""
    body = struct.pack(">iiqi", 0, timeout_ms, session_id, len(passwd)) + passwd + b"\x00"
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize("pieces", [1, 3, 13], ids=lambda n: f"in {n} recvs")
def test_the_granted_timeout_is_read_off_the_connect_response(pieces: int) -> None:
    granted: list[int] = []
    a, b = socket.socketpair()
    try:
        wrapped = HandshakeSocket(a, lambda ms, _at: granted.append(ms), 1.0)
        frame = _connect_response(4000) + b"next answer"
        b.sendall(frame)
        size = max(1, len(frame) // pieces)
        got = b""
        while len(got) < len(frame):
            got += wrapped.recv(size)  # kazoo reads the length, then the body; batches read more at once
        assert got == frame  # the bytes pass through untouched
        assert granted == [4000]
        assert wrapped.recv == a.recv  # and the socket's own recv takes over: no cost per later read
        assert wrapped.fileno() == a.fileno()  # everything else is the socket's
    finally:
        a.close()
        b.close()


def test_an_expired_session_grants_nothing() -> None:
    # Asked to resume a session the server has expired, it answers timeOut 0 (kazoo: SessionExpired).
    granted: list[int] = []
    a, b = socket.socketpair()
    try:
        b.sendall(_connect_response(0))
        HandshakeSocket(a, lambda ms, _at: granted.append(ms), 1.0).recv(1024)
        assert granted == []
    finally:
        a.close()
        b.close()


@pytest.fixture
def two_connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[socket.socket], list[float]]]:
    """kazoo's next two connections as socket pairs: the server ends to answer on, and when each
    connection was opened (on the lease clock, which the handler stamps with)."""
    pairs = [socket.socketpair() for _ in range(2)]
    sockets = iter(a for a, _b in pairs)
    opened: list[float] = []

    def connect(self, *a, **k):  # type: ignore[no-untyped-def]
        opened.append(lease_clock())
        return next(sockets)

    monkeypatch.setattr(SequentialThreadingHandler, "create_connection", connect)
    try:
        yield [b for _a, b in pairs], opened
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_the_handler_keeps_the_last_grant_per_connection(two_connections) -> None:  # type: ignore[no-untyped-def]
    servers, _opened = two_connections
    handler = make_handler()
    assert handler.negotiated_session_timeout_ms is None
    for server, timeout_ms in zip(servers, (6000, 4000)):  # a reconnect to a server with a lower cap
        server.sendall(_connect_response(timeout_ms))
        handler.create_connection(("127.0.0.1", 2181)).recv(4096)
        assert handler.negotiated_session_timeout_ms == timeout_ms


def test_the_handshake_stamp_is_taken_before_the_connect_and_kept_only_for_a_grant(two_connections) -> None:  # type: ignore[no-untyped-def]
    # The lease after a reconnect counts from this stamp: it must precede the server's renewal (so it
    # is taken before the TCP connect), and a connection whose handshake granted nothing (an expired
    # session) must not move it.
    (first_server, second_server), opened = two_connections
    handler = make_handler()
    first_server.sendall(_connect_response(4000))
    handler.create_connection(("127.0.0.1", 2181)).recv(4096)
    first = handler.handshake_started_at
    assert first is not None and first <= opened[0]
    second_server.sendall(_connect_response(0))  # asked to resume a session the server had expired
    handler.create_connection(("127.0.0.1", 2181)).recv(4096)
    assert handler.handshake_started_at == first


def test_each_connect_waits_one_server_s_share_of_the_session_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # kazoo passes the whole session timeout; an ensemble member that drops packets must not hold a
    # client for all of it (the Java client divides by the number of servers too).
    asked: list[float] = []

    def fake(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(kwargs["timeout"])
        a, b = socket.socketpair()
        b.close()
        return a

    monkeypatch.setattr(SequentialThreadingHandler, "create_connection", fake)
    for hosts, expected in (("zk1:2181,zk2:2181,zk3:2181/kafka", 2.0), ("zk1:2181", 6.0), ("", 6.0)):
        make_handler(hosts).create_connection(("127.0.0.1", 2181), timeout=6.0).close()
        assert asked.pop() == pytest.approx(expected), hosts
