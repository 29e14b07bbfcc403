"""A loopback TCP forwarder that can cut traffic without closing anything: a network partition for one client."""

from __future__ import annotations

import logging
import selectors
import socket
import threading

log = logging.getLogger(__name__)


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target; `cut()` silently drops everything, `heal()` restores.

    While cut, bytes in either direction vanish and new connections are accepted but never
    answered, as with a dead link: the client only notices by its own timeouts, and the server
    (ZooKeeper) only by the client's silence. `heal()` closes what was cut, so the client
    reconnects through a working link.

    Example::

        proxy = TcpProxy("127.0.0.1", zk_port); proxy.start()
        member connects to f"{proxy.address}/chroot"; ...; proxy.cut(); ...; proxy.heal(); proxy.stop()
    """

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._peers: dict[socket.socket, socket.socket | None] = {}  # each side -> the other (None: parked)
        self._cut = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"chaos-proxy-{self.port}", daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TcpProxy:
        self._server.setblocking(False)
        self._selector.register(self._server, selectors.EVENT_READ)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        with self._lock:
            for sock in list(self._peers):
                self._close(sock)
        self._server.close()

    def cut(self) -> None:
        with self._lock:
            self._cut = True

    def heal(self) -> None:
        """Drop every connection made or kept during the cut; new ones are forwarded again."""
        with self._lock:
            self._cut = False
            for sock in list(self._peers):
                self._close(sock)

    # ---- the one forwarding thread -----------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                with self._lock:
                    if sock is self._server:
                        self._accept()
                    elif sock in self._peers:
                        self._forward(sock)

    def _accept(self) -> None:
        client, _ = self._server.accept()
        client.settimeout(5.0)  # only sendall() blocks, and only on a peer that stopped reading
        upstream = None
        if not self._cut:
            try:
                upstream = socket.create_connection(self.target, timeout=5.0)
            except OSError:
                client.close()
                return
            self._peers[upstream] = client
            self._selector.register(upstream, selectors.EVENT_READ)
        self._peers[client] = upstream
        self._selector.register(client, selectors.EVENT_READ)

    def _forward(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._close(sock)
            return
        other = self._peers.get(sock)
        if self._cut or other is None:
            return  # the link is down: the bytes are lost
        try:
            other.sendall(data)
        except OSError:
            self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        other = self._peers.pop(sock, None)
        for s in (sock, other):
            if s is None:
                continue
            self._peers.pop(s, None)
            try:
                self._selector.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
