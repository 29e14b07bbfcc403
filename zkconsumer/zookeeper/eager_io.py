"""kazoo's connection reads and writes that try the socket before waiting on it (kazoo internals:
installed only through `internals.install`, on the kazoo versions it was written against).

kazoo's `_read` and `_write` wait on the socket (a poll) before every recv and send, although the
loop around them has just been told the socket is ready: an answer costs three polls and two
recvs. Every one of those calls lets go of the GIL, and with tens of members in a process each
let-go is a wait to get it back. `use_eager_io` makes a connection try the call first and poll
only when the socket says it would block. batches.py goes further on the connections it is
installed on (all but TLS ones read through its buffer, and every one sends its queue in
batches); the eager calls remain the writes of both and the reads of TLS connections.
"""

from __future__ import annotations

import ssl
import types
from typing import Any

from kazoo.exceptions import ConnectionDropped

__all__ = ["recv_eagerly", "use_eager_io"]

# The socket has nothing to give or no room to take yet: wait for it, then try again.
_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def recv_eagerly(connection: Any, size: int, timeout: float) -> bytes:
    """One recv of at most `size` bytes from a kazoo connection's socket, polling only when it
    would block; a closed peer raises ConnectionDropped and a poll that times out the handler's
    timeout exception. Called inside the connection's _socket_error_handling."""
    while True:
        try:
            chunk: bytes = connection._socket.recv(size)
        except _WOULD_BLOCK:
            if not connection.handler.select([connection._socket], [], [], timeout)[0]:
                raise connection.handler.timeout_exception("socket time-out during read") from None
            continue
        if chunk == b"":
            raise ConnectionDropped("socket connection broken")
        return chunk


def _eager_read(self: Any, length: int, timeout: float) -> bytes:
    """kazoo's ConnectionHandler._read, polling only when a recv would block."""
    parts = []
    remaining = length
    with self._socket_error_handling():
        while remaining > 0:
            chunk = recv_eagerly(self, remaining, timeout)
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)


def _eager_write(self: Any, msg: bytes, timeout: float) -> None:
    """kazoo's ConnectionHandler._write, polling only when a send would block."""
    sent = 0
    view = memoryview(msg)
    with self._socket_error_handling():
        while sent < len(msg):
            try:
                count = self._socket.send(view[sent:])
            except _WOULD_BLOCK:
                if not self.handler.select([], [self._socket], [], timeout)[1]:
                    raise self.handler.timeout_exception("socket time-out during write") from None
                continue
            if not count:
                raise ConnectionDropped("socket connection broken")
            sent += count


def use_eager_io(connection: Any) -> bool:
    """Give this kazoo ConnectionHandler (`client._connection`) the eager read and write; False,
    leaving it as it is, if it lacks what they rely on (another kazoo version)."""
    needed = ("_read", "_write", "_socket_error_handling", "handler")
    if not all(hasattr(connection, name) for name in needed):
        return False
    connection._read = types.MethodType(_eager_read, connection)
    connection._write = types.MethodType(_eager_write, connection)
    return True
