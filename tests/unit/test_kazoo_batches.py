"""A turn of kazoo's loop reads every waiting wake-up byte at once, sends every queued request (up
to BATCH) in one write and handles every whole answer one recv brought; nothing waits on a full
pipe, and nothing is sent twice or lost."""

from __future__ import annotations

import collections
import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionDropped,
    SessionExpiredError,
)
from kazoo.handlers.threading import AsyncResult
from kazoo.protocol.connection import _CONNECTION_DROP, _SESSION_EXPIRED, AUTH_XID, CLOSE_RESPONSE
from kazoo.protocol.serialization import Auth, Close, GetData
from kazoo.protocol.states import KeeperState

from zkconsumer.zookeeper.batches import BATCH, use_batches
from zkconsumer.zookeeper.handler import PollHandler

_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT


class Client:
    """kazoo's KazooClient as the batches see it."""

    def __init__(self) -> None:
        self._queue: collections.deque[Any] = collections.deque()
        self._pending: collections.deque[Any] = collections.deque()
        self._state = KeeperState.CONNECTED
        self.use_ssl = False
        self._connection: Any = None

    _call = KazooClient._call  # kazoo's own: queue the request, write one wake-up byte

    def _notify_pending(self, state: Any) -> None:
        raise AssertionError("not called by a turn")


class Connection:
    """kazoo's ConnectionHandler as the batches see it: a wake-up pipe, and a socket to a fake
    server whose answers are length-prefixed bodies (b"close" is the close answer)."""

    def __init__(self, default_timeout: float | None = None) -> None:
        self.client = Client()
        self.client._connection = self
        saved = socket.getdefaulttimeout()
        socket.setdefaulttimeout(default_timeout)  # kazoo's socketpair() takes the process default
        try:
            self._read_sock, self._write_sock = socket.socketpair()
        finally:
            socket.setdefaulttimeout(saved)
        self._socket: Any
        self._socket, self.server = socket.socketpair()
        self._socket.setblocking(False)
        self._xid = 0
        self.handler = PollHandler()
        self.logger = logging.getLogger("test_kazoo_batches")
        self.writes = 0
        self.answers: list[bytes] = []

    @contextlib.contextmanager
    def _socket_error_handling(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise ConnectionDropped(f"socket connection error: {exc}") from exc

    def _write(self, msg: bytes, timeout: float) -> None:
        self.writes += 1
        self._socket.sendall(msg)

    def _send_request(self, read_timeout: float, connect_timeout: float) -> None:
        raise AssertionError("replaced by use_batches")

    def _read(self, length: int, timeout: float) -> bytes:
        raise AssertionError("replaced by use_batches")

    def _read_socket(self, read_timeout: float) -> Any:  # kazoo's shape: one answer, through _read
        (length,) = struct.unpack(">i", self._read(4, read_timeout))
        body = self._read(length, read_timeout)
        self.answers.append(body)
        return CLOSE_RESPONSE if body == b"close" else None

    def call(self, *paths: str) -> list[AsyncResult]:
        results = []
        for path in paths:
            result = self.handler.async_result()
            self.client._call(GetData(path, None), result)
            results.append(result)
        return results

    def wake_bytes(self) -> int:
        try:
            return len(self._read_sock.recv(1 << 16, _PEEK))
        except BlockingIOError:
            return 0

    def sent(self) -> list[tuple[int, int, bytes]]:
        """(xid, type, body) of every frame the server has received so far."""
        self.server.setblocking(False)
        data = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := self.server.recv(1 << 16):
                data += chunk
        frames = []
        while data:
            (length,) = struct.unpack(">i", data[:4])
            xid, kind = struct.unpack(">ii", data[4:12])
            frames.append((xid, kind, data[12 : 4 + length]))
            data = data[4 + length :]
        return frames


def path_of(body: bytes) -> bytes:
    """The path a GetData body asks for (kazoo's write_string: length, bytes)."""
    return body[4 : 4 + struct.unpack(">i", body[:4])[0]]


def answer(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


@pytest.fixture
def c() -> Iterator[Connection]:
    conn = Connection()
    assert use_batches(conn)
    yield conn
    for sock in (conn._read_sock, conn._write_sock, conn._socket, conn.server):
        sock.close()


def test_a_turn_sends_every_queued_request_in_one_write_in_queue_order(c: Connection) -> None:
    c.call("/a", "/b", "/c")
    assert c.wake_bytes() == 3  # one per request, as kazoo's callers write them
    c._send_request(1.0, 1.0)
    assert c.writes == 1
    assert [(xid, path_of(body)) for xid, _, body in c.sent()] == [(1, b"/a"), (2, b"/b"), (3, b"/c")]
    assert [xid for _, _, xid in c.client._pending] == [1, 2, 3] and not c.client._queue
    assert c.wake_bytes() == 0


def test_a_turn_sends_at_most_a_batch_and_wakes_the_loop_for_the_rest(c: Connection) -> None:
    c.call(*[f"/p{i}" for i in range(BATCH + 5)])
    c._send_request(1.0, 1.0)
    assert len(c.sent()) == BATCH and len(c.client._queue) == 5
    assert c.wake_bytes() == 1  # the callers' bytes were all read; this one brings the loop back
    c._send_request(1.0, 1.0)
    assert len(c.sent()) == 5 and not c.client._queue and c.wake_bytes() == 0


def test_a_request_queued_during_the_write_is_sent_on_the_next_turn(c: Connection) -> None:
    c.call("/a")
    write = c._write

    def write_while_a_caller_queues(msg: bytes, timeout: float) -> None:
        c.call("/late")  # after the turn read the bytes: /late's comes now
        write(msg, timeout)

    c._write = write_while_a_caller_queues  # type: ignore[method-assign]
    c._send_request(1.0, 1.0)
    assert c.wake_bytes() >= 1  # the loop comes back for /late
    c._write = write  # type: ignore[method-assign]
    c._send_request(1.0, 1.0)
    assert [path_of(body) for _, _, body in c.sent()] == [b"/a", b"/late"]


@pytest.mark.parametrize("default_timeout", [None, 3.0])
def test_a_turn_never_waits_on_a_full_pipe(default_timeout: float | None) -> None:
    c = Connection(default_timeout)
    assert use_batches(c)
    c.call(*[f"/p{i}" for i in range(BATCH + 1)])
    write = c._write

    def write_while_callers_fill_the_pipe(msg: bytes, timeout: float) -> None:
        kept = c._write_sock.gettimeout()
        c._write_sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                c._write_sock.send(b"\0")
        c._write_sock.settimeout(kept)
        write(msg, timeout)

    c._write = write_while_callers_fill_the_pipe  # type: ignore[method-assign]
    turn = threading.Thread(target=c._send_request, args=(1.0, 1.0), daemon=True)
    began = time.monotonic()
    turn.start()
    turn.join(5.0)
    assert not turn.is_alive() and time.monotonic() - began < 1.0  # not the pipe's 3 s timeout
    assert len(c.client._queue) == 1 and c.wake_bytes() > 0


def test_a_failed_write_leaves_the_requests_queued_and_the_loop_woken(c: Connection) -> None:
    c.call("/a", "/b")

    def broken(msg: bytes, timeout: float) -> None:
        raise ConnectionDropped("socket connection broken")

    c._write = broken  # type: ignore[method-assign]
    with pytest.raises(ConnectionDropped):
        c._send_request(1.0, 1.0)
    assert [r.path for r, _ in c.client._queue] == ["/a", "/b"] and not c.client._pending
    assert c.wake_bytes() == 1  # their bytes were read before the write: the loop is woken for them again


@pytest.mark.parametrize(
    ("hook", "error"), [(_CONNECTION_DROP, ConnectionDropped), (_SESSION_EXPIRED, SessionExpiredError)]
)
def test_kazoos_test_hooks_are_met_in_queue_order(c: Connection, hook: object, error: type[Exception]) -> None:
    c.call("/a")
    c.client._queue.append((hook, None))
    c.call("/b")
    c._send_request(1.0, 1.0)
    assert [xid for xid, _, _ in c.sent()] == [1]  # what precedes the hook goes out first
    with pytest.raises(error):
        c._send_request(1.0, 1.0)


def test_the_close_request_is_the_last_one_sent(c: Connection) -> None:
    c.call("/a")
    c.client._queue.append((Close(), None))  # as KazooClient.stop queues it
    c.call("/late")
    c._send_request(1.0, 1.0)
    assert [kind for _, kind, _ in c.sent()] == [GetData.type, Close.type]
    assert [r.path for r, _ in c.client._queue] == ["/late"]


def test_an_auth_request_takes_the_auth_xid_and_leaves_the_counter_alone(c: Connection) -> None:
    c.call("/a")
    c.client._call(Auth(0, "digest", "u:p"), c.handler.async_result())
    c.call("/b")
    c._send_request(1.0, 1.0)
    assert [xid for xid, _, _ in c.sent()] == [1, AUTH_XID, 2]


def test_one_recv_brings_several_answers_and_one_turn_handles_them_all(c: Connection) -> None:
    recvs = []
    real = c._socket

    class Counting:
        def recv(self, size: int) -> bytes:
            recvs.append(size)
            return real.recv(size)

        def fileno(self) -> int:
            return real.fileno()

        def close(self) -> None:
            real.close()

    c._socket = Counting()
    c.server.sendall(answer(b"one") + answer(b"two") + answer(b"three"))
    assert c._read_socket(1.0) is None
    assert c.answers == [b"one", b"two", b"three"] and len(recvs) == 1


def test_a_partial_answer_waits_in_the_inbox_for_its_rest(c: Connection) -> None:
    whole = answer(b"second answer")
    c.server.sendall(answer(b"first") + whole[:6])
    c._read_socket(1.0)
    assert c.answers == [b"first"]  # the turn ends without waiting for the rest
    c.server.sendall(whole[6:])
    c._read_socket(1.0)
    assert c.answers == [b"first", b"second answer"]


def test_the_close_answer_ends_the_turn(c: Connection) -> None:
    c.server.sendall(answer(b"close") + answer(b"after"))
    assert c._read_socket(1.0) == CLOSE_RESPONSE and c.answers == [b"close"]


def test_a_new_socket_starts_with_an_empty_inbox(c: Connection) -> None:
    c.server.sendall(answer(b"whole") + answer(b"cut short")[:7])
    c._read_socket(1.0)
    c._socket, c.server = socket.socketpair()  # kazoo reconnected
    c._socket.setblocking(False)
    c.server.sendall(answer(b"fresh"))
    c._read_socket(1.0)
    assert c.answers == [b"whole", b"fresh"]


def test_a_read_times_out_and_a_closed_peer_drops_the_connection(c: Connection) -> None:
    with pytest.raises(c.handler.timeout_exception):
        c._read(4, 0.05)
    c.server.sendall(b"\0\0")
    c.server.close()
    with pytest.raises(ConnectionDropped):
        c._read(4, 1.0)


def test_tls_keeps_kazoos_reads_and_batches_its_sends() -> None:
    conn = Connection()
    conn.client.use_ssl = True
    read = conn._read_socket
    assert use_batches(conn)
    assert conn._read_socket == read and conn._send_request.__func__.__name__ == "_send_queued"  # type: ignore[attr-defined]


def test_installed_once_and_not_on_a_kazoo_without_what_it_uses() -> None:
    conn = Connection()
    assert use_batches(conn)
    send = conn._send_request
    assert use_batches(conn) and conn._send_request == send
    bare = Connection()
    del bare.client._pending  # stands for an older or newer kazoo
    assert not use_batches(bare)
    assert bare._send_request.__func__ is Connection._send_request  # type: ignore[attr-defined]


def test_kazoos_own_client_has_what_the_batches_replace() -> None:
    client = KazooClient(hosts="127.0.0.1:1")
    assert use_batches(client._connection)
    assert client._connection._send_request.__func__.__name__ == "_send_queued"
