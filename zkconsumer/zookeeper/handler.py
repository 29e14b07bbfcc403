"""kazoo's socket work made cheaper for many clients in one process: select() on one poll(2), and
reads and writes that try the socket before waiting on it.

kazoo's connection thread calls `handler.select` once per request it sends and once per answer
it waits for; its default builds, registers and closes an epoll object each time (five system
calls, each releasing and re-taking the GIL). Profiling 33 members in one process through one
join at 1,024 partitions put about two thirds of the process's busy samples there.

Beyond that, kazoo's `_read` and `_write` wait on the socket (a poll) before every recv and
send, although the loop around them has just been told the socket is ready: an answer costs
three polls and two recvs. Every one of those calls lets go of the GIL, and with tens of members
in a process each let-go is a wait to get it back. `use_eager_io` makes a connection try the
call first and poll only when the socket says it would block.

kazoo_batches goes further on the connections it is installed on (all but TLS ones read through
its buffer, and every one sends its queue in batches); the eager calls remain the writes of both
and the reads of TLS connections.
"""

from __future__ import annotations

import select
import ssl
import types
from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import ConnectionDropped
from kazoo.handlers.threading import SequentialThreadingHandler

__all__ = ["PollHandler", "poll_select", "make_handler", "recv_eagerly", "use_eager_io"]

_HAS_POLL = hasattr(select, "poll")  # not on Windows
_READ = select.POLLIN | select.POLLPRI if _HAS_POLL else 0
_WRITE = select.POLLOUT if _HAS_POLL else 0
_TROUBLE = (select.POLLERR | select.POLLHUP | select.POLLNVAL) if _HAS_POLL else 0


def _fd(obj: Any) -> int:
    return obj if isinstance(obj, int) else int(obj.fileno())


def poll_select(
    rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    """select.select's contract (the ready objects of each list) on poll(2), without select's
    limit on descriptor numbers. An error or hang-up counts as ready for both reading and writing,
    as select reports it: the caller's read or write then meets the error."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    for obj in rlist:
        fd = _fd(obj)
        masks[fd] = masks.get(fd, 0) | _READ
    for obj in wlist:
        fd = _fd(obj)
        masks[fd] = masks.get(fd, 0) | _WRITE
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    ready = dict(poller.poll(None if timeout is None else timeout * 1000.0))
    readable = [o for o in rlist if ready.get(_fd(o), 0) & (_READ | _TROUBLE)]
    writable = [o for o in wlist if ready.get(_fd(o), 0) & (_WRITE | _TROUBLE)]
    return readable, writable, []


class PollHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped: its class is Any
    """SequentialThreadingHandler whose select is poll_select."""

    name = "sequential_threading_poll_handler"

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return poll_select(*args, **kwargs)


def make_handler() -> SequentialThreadingHandler:
    """PollHandler where the platform has poll(2) (not Windows), else kazoo's own."""
    return PollHandler() if _HAS_POLL else SequentialThreadingHandler()


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
