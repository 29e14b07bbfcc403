"""The eager read and write keep kazoo's _read/_write contract and poll only when the socket would block."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.exceptions import ConnectionDropped
from kazoo.protocol.connection import ConnectionHandler

from zkconsumer.zookeeper.eager_io import use_eager_io
from zkconsumer.zookeeper.handler import PollHandler


class CountingHandler(PollHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.selects = 0
        self.polled = threading.Event()

    def select(self, *args: Any, **kwargs: Any) -> Any:
        self.selects += 1
        self.polled.set()
        return super().select(*args, **kwargs)


class Connection:
    """What the eager calls use of kazoo's ConnectionHandler, on one end of a socket pair."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)  # as kazoo's _connect leaves it
        self._socket = sock
        self.handler = CountingHandler()
        self._read = self._write = None

    @contextlib.contextmanager
    def _socket_error_handling(self) -> Iterator[None]:  # kazoo's: socket errors become ConnectionDropped
        try:
            yield
        except OSError as exc:
            raise ConnectionDropped(f"socket connection error: {exc}") from exc


@pytest.fixture
def pair() -> Iterator[tuple[Any, socket.socket]]:
    ours, theirs = socket.socketpair()
    conn = Connection(ours)
    assert use_eager_io(conn)
    yield conn, theirs
    ours.close()
    theirs.close()


def test_kazoos_connection_handler_has_what_the_eager_calls_replace() -> None:
    for name in ("_read", "_write", "_socket_error_handling"):
        assert callable(getattr(ConnectionHandler, name))


def test_a_read_of_data_already_there_does_not_poll(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair
    theirs.sendall(b"\x00\x00\x00\x05hello")
    assert conn._read(4, 1.0) == b"\x00\x00\x00\x05"
    assert conn._read(5, 1.0) == b"hello"
    assert conn.handler.selects == 0


def test_a_read_waits_for_data_that_comes_later_and_in_pieces(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair

    def send_late() -> None:
        theirs.sendall(b"ab")
        threading.Event().wait(0.1)
        theirs.sendall(b"cd")

    threading.Thread(target=send_late).start()
    assert conn._read(4, 5.0) == b"abcd"
    assert conn.handler.selects >= 1


def test_a_read_times_out_and_a_closed_peer_drops_the_connection(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair
    with pytest.raises(conn.handler.timeout_exception):
        conn._read(1, 0.05)
    theirs.close()
    with pytest.raises(ConnectionDropped):
        conn._read(1, 1.0)


def test_a_write_larger_than_the_socket_buffer_waits_for_room(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair
    message = bytes(range(256)) * 16384  # 4 MiB: more than a socket pair buffers
    received = bytearray()

    def drain() -> None:
        # Nothing is read until the writer has polled, so the buffer must fill: a reader that keeps
        # up from the start lets a fast machine finish the write without ever waiting.
        conn.handler.polled.wait(10.0)
        while len(received) < len(message):
            received.extend(theirs.recv(1 << 16))

    reader = threading.Thread(target=drain, name="test-drain")
    reader.start()
    conn._write(message, 10.0)
    reader.join(10.0)
    assert bytes(received) == message
    assert conn.handler.selects >= 1  # the buffer filled at least once


def test_a_small_write_does_not_poll(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair
    conn._write(b"ping", 1.0)
    assert theirs.recv(4) == b"ping" and conn.handler.selects == 0


def test_a_write_to_a_closed_peer_drops_the_connection(pair: tuple[Any, socket.socket]) -> None:
    conn, theirs = pair
    theirs.close()
    with pytest.raises(ConnectionDropped):
        for _ in range(100):  # the first send may still be buffered
            conn._write(b"x" * 65536, 1.0)


def test_a_connection_without_what_they_need_is_left_alone() -> None:
    class Other:
        _read = "kazoo's own"

    other = Other()
    assert not use_eager_io(other)
    assert other._read == "kazoo's own"
