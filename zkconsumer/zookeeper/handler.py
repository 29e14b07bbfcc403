"""zkconsumer's kazoo handler (kazoo's public extension point): select() on one poll(2), and the
session timeout the server granted, read off each connection's handshake.

kazoo's connection thread calls `handler.select` once per request it sends and once per answer
it waits for; its default builds, registers and closes an epoll object each time (five system
calls, each releasing and re-taking the GIL). Profiling 33 members in one process through one
join at 1,024 partitions put about two thirds of the process's busy samples there.

The server may lower the session timeout a client asks for to its maxSessionTimeout, and kazoo
keeps the value it was granted to itself. A member's delivery lease must not outlive the real
session, so the handler wraps each socket it opens for kazoo and reads the timeout out of the
first answer on it, ZooKeeper's ConnectResponse (length, protocolVersion, timeOut, ...): the
wire protocol, which no kazoo release can change.

kazoo gives each TCP connect the whole session timeout; the Java client gives it the session
timeout divided by the number of servers. With an ensemble, a server that drops packets (an
isolated leader) then held a member for a whole session timeout on one connect, and its session
expired although two other servers were up. The handler divides the connect timeout as Java does
(`servers`, set by the client that owns it).
"""

from __future__ import annotations

import select
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

from zkconsumer.clock import lease_clock

__all__ = ["HandshakeSocket", "PollHandler", "make_handler", "poll_select"]

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


# A ConnectResponse opens with its length, then protocolVersion and timeOut (big-endian int32s).
_TIMEOUT_AT = slice(8, 12)


class HandshakeSocket:
    """A socket that reads the granted session timeout off the first answer it receives (the
    ConnectResponse), then gets out of the way: its `recv` becomes the socket's own bound method,
    so later reads cost nothing extra. Every other attribute is the socket's."""

    def __init__(self, sock: Any, record: Callable[[int, float], None], started_at: float) -> None:
        self._sock = sock
        self._record = record
        self._started_at = started_at  # before the connect: the handshake was sent after it
        self._head = b""

    def recv(self, size: int, *flags: int) -> bytes:
        data: bytes = self._sock.recv(size, *flags)
        self._head += data[: _TIMEOUT_AT.stop - len(self._head)]
        if len(self._head) >= _TIMEOUT_AT.stop or not data:
            if len(self._head) >= _TIMEOUT_AT.stop:
                granted = int.from_bytes(self._head[_TIMEOUT_AT], "big", signed=True)
                if granted > 0:  # 0: the session we asked to resume has expired; nothing was granted
                    self._record(granted, self._started_at)
            self.recv = self._sock.recv  # type: ignore[method-assign]  # done: straight to the socket
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class PollHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped: its class is Any
    """SequentialThreadingHandler whose select is poll_select (where the platform has poll(2)) and
    whose connections report the session timeout the server granted:
    `negotiated_session_timeout_ms`, None until a handshake was read, and `handshake_started_at`,
    the lease clock (zkconsumer.clock) read before the connection whose handshake granted it was opened (the server
    renewed the session after that). One handler per client."""

    name = "sequential_threading_poll_handler"

    def __init__(self, servers: int = 1) -> None:
        super().__init__()
        self.negotiated_session_timeout_ms: int | None = None
        self.handshake_started_at: float | None = None
        self.servers = max(1, servers)  # how many ZooKeeper servers the connect string names

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        if not _HAS_POLL:
            return super().select(*args, **kwargs)  # type: ignore[no-any-return]
        return poll_select(*args, **kwargs)

    def create_connection(self, *args: Any, **kwargs: Any) -> HandshakeSocket:
        if kwargs.get("timeout") is not None:  # kazoo passes the session timeout: one server's share
            kwargs["timeout"] = kwargs["timeout"] / self.servers
        started_at = lease_clock()
        return HandshakeSocket(super().create_connection(*args, **kwargs), self._granted, started_at)

    def _granted(self, timeout_ms: int, started_at: float) -> None:
        self.negotiated_session_timeout_ms = timeout_ms
        self.handshake_started_at = started_at


def make_handler(hosts: str = "") -> PollHandler:
    """A handler for one kazoo client of the connect string `hosts` ("h1:2181,h2:2181/chroot")."""
    servers = hosts.split("/", 1)[0]
    return PollHandler(servers=len([h for h in servers.split(",") if h.strip()]))
