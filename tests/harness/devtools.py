"""A DevTools protocol session with one Chromium page over a websocket (RFC 6455, stdlib only): navigate, evaluate, screenshot."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class DevToolsError(RuntimeError):
    """The page answered a command with an error, closed the connection, or a wait ran out."""


class DevTools:
    """Commands to one page target (`ws_url`: its webSocketDebuggerUrl from /json/list), answered
    in order; events that arrive meanwhile are kept in `events` (method, params).

    Example::

        page = DevTools(ws_url, timeout_s=30)
        page.navigate("http://127.0.0.1:9308/")
        page.wait_for("document.body.dataset.renders >= 1", timeout_s=10)
        page.screenshot(Path("page.png"))
    """

    def __init__(self, ws_url: str, timeout_s: float = 30.0) -> None:
        url = urlsplit(ws_url)
        self.timeout_s = timeout_s
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._id = 0
        self._sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=timeout_s)
        key = base64.b64encode(os.urandom(16)).decode()
        self._sock.sendall(
            (
                f"GET {url.path} HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise DevToolsError(f"{ws_url}: the connection closed during the handshake ({head!r})")
            head += chunk
        head, _, self._buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise DevToolsError(f"{ws_url}: no websocket upgrade: {head.decode(errors='replace')}")

    def close(self) -> None:
        try:
            self._send(b"", opcode=0x8)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (DevToolsError naming the method on an error)."""
        self._id += 1
        sent = self._id
        self._send(json.dumps({"id": sent, "method": method, "params": params}).encode())
        while True:
            message = json.loads(self._receive())
            if message.get("id") == sent:
                if "error" in message:
                    raise DevToolsError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); DevToolsError on a throw."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise DevToolsError(
                f"{expression[:80]!r} threw: {details.get('exception', {}).get('description', details)}"
            )
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float, every_s: float = 0.05) -> Any:
        """The first truthy value of `expression`, polled; DevToolsError with the last value after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        value = None
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(every_s)
        raise DevToolsError(f"{expression!r} not true within {timeout_s:g} s (last value {value!r})")

    def navigate(self, url: str, width: int = 1280, height: int = 900) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the viewport), written to `path`."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = base64.b64decode(
            self.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)["data"]
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data

    def _send(self, payload: bytes, opcode: int = 0x1) -> None:
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        repeated = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
        masked = (int.from_bytes(payload, "big") ^ repeated).to_bytes(n, "big")
        self._sock.sendall(head + mask + masked)

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            chunk = self._sock.recv(max(65536, n - len(self._buffer)))
            if not chunk:
                raise DevToolsError("the page's websocket closed")
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _receive(self) -> str:
        """One whole text message (fragments joined; pings answered)."""
        parts: list[bytes] = []
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)  # a server's frames are never masked
            opcode = first & 0x0F
            if opcode == 0x8:
                raise DevToolsError(f"the page closed the websocket: {payload[2:].decode(errors='replace')}")
            if opcode == 0x9:
                self._send(payload, opcode=0xA)
                continue
            if opcode == 0xA:
                continue
            parts.append(payload)
            if first & 0x80:
                return b"".join(parts).decode()
