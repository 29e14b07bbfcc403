"""HandshakeSocket: a socket that reads the session timeout the server granted off each connection's handshake."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
