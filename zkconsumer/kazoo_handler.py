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

And kazoo's loop serves one request or one answer per turn, each turn a select: a burst of N
pipelined reads costs 2N selects. `use_bursts` makes a turn also send the requests already queued
(and woken) and read the answers already arrived, up to BURST of each.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
import types
from collections.abc import Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

__all__ = ["BURST", "PollHandler", "poll_select", "make_handler", "use_bursts", "use_eager_io"]

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


def _eager_read(self: Any, length: int, timeout: float) -> bytes:
    """kazoo's ConnectionHandler._read, polling only when a recv would block."""
    from kazoo.exceptions import ConnectionDropped

    parts = []
    remaining = length
    with self._socket_error_handling():
        while remaining > 0:
            try:
                chunk = self._socket.recv(remaining)
            except _WOULD_BLOCK:
                if not self.handler.select([self._socket], [], [], timeout)[0]:
                    raise self.handler.timeout_exception("socket time-out during read") from None
                continue
            if chunk == b"":
                raise ConnectionDropped("socket connection broken")
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)


def _eager_write(self: Any, msg: bytes, timeout: float) -> None:
    """kazoo's ConnectionHandler._write, polling only when a send would block."""
    from kazoo.exceptions import ConnectionDropped

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


BURST = 64  # requests sent, or answers read, per turn of kazoo's loop at most: neither starves the other
_PEEK = getattr(socket, "MSG_PEEK", 0) | getattr(socket, "MSG_DONTWAIT", 0)


def _waiting(sock: Any) -> bool:
    """Whether a byte can be read from `sock` right now (without reading it, and without waiting)."""
    try:
        if sock.gettimeout():  # a socket with a timeout (socket.setdefaulttimeout) waits before any recv
            return bool(poll_select([sock], [], [], 0)[0])
        return bool(sock.recv(1, _PEEK))
    except (OSError, ValueError):  # would block, or the socket is gone: let the loop see to it
        return False


def _send_burst(self: Any, read_timeout: float, connect_timeout: float) -> None:
    """kazoo's _send_request, then again while requests are queued and a wake-up byte is waiting.
    kazoo's client queues a request, then writes one byte to wake the loop; each _send_request
    consumes one byte, as kazoo's own turns do, so the pipe never holds fewer bytes than the
    queue's unsent requests that have written theirs, and no recv on it waits."""
    send = self._zkc_send_one
    send(read_timeout, connect_timeout)
    for _ in range(BURST - 1):
        wake = self._read_sock
        if not self.client._queue or wake is None or not _waiting(wake):
            return
        send(read_timeout, connect_timeout)


def _read_burst(self: Any, read_timeout: float) -> Any:
    """kazoo's _read_socket, then again while the next answer has begun to arrive; returns the last
    result, or the close answer (which ends kazoo's loop) as soon as it is read. kazoo's loop
    looks at its ping deadline only between turns, so a burst also ends after a tenth of the read
    timeout (at most 50 ms)."""
    from kazoo.protocol.connection import CLOSE_RESPONSE

    read = self._zkc_read_one
    response = read(read_timeout)
    until = time.monotonic() + min(0.05, read_timeout / 10)
    for _ in range(BURST - 1):
        if response == CLOSE_RESPONSE or time.monotonic() > until or not _waiting(self._socket):
            return response
        response = read(read_timeout)
    return response


def use_bursts(connection: Any) -> bool:
    """Give this kazoo ConnectionHandler the burst send and read (once; again is a no-op); False,
    leaving it as it is, on a platform without non-blocking peeks or a kazoo without what they rely
    on. A TLS connection keeps one answer per turn (a peek would see the encrypted stream)."""
    needed = ("_send_request", "_read_socket", "_read_sock", "_socket", "client")
    if not (hasattr(socket, "MSG_PEEK") and hasattr(socket, "MSG_DONTWAIT")):
        return False
    if not all(hasattr(connection, name) for name in needed):
        return False
    if hasattr(connection, "_zkc_send_one"):
        return True
    connection._zkc_send_one = connection._send_request
    connection._send_request = types.MethodType(_send_burst, connection)
    if not getattr(connection.client, "use_ssl", False):
        connection._zkc_read_one = connection._read_socket
        connection._read_socket = types.MethodType(_read_burst, connection)
    return True
