"""A turn of kazoo's loop sends the requests already queued and woken, and reads the answers already
arrived, up to BURST each, without ever sending a request before its wake-up byte or blocking."""

from __future__ import annotations

import collections
import socket
from typing import Any

from kazoo.protocol.connection import CLOSE_RESPONSE

from zkconsumer.kazoo_handler import BURST, use_bursts


class Client:
    def __init__(self) -> None:
        self._queue: collections.deque[str] = collections.deque()
        self.use_ssl = False


class Connection:
    """kazoo's ConnectionHandler as the burst calls see it: a wake-up pipe for queued requests, and
    a socket whose answers are 4-byte records (b"CLOS" is the close answer)."""

    def __init__(self, default_timeout: float | None = None) -> None:
        self.client = Client()
        saved = socket.getdefaulttimeout()
        socket.setdefaulttimeout(default_timeout)  # kazoo's socketpair() takes the process default
        try:
            self._read_sock, self._write_sock = socket.socketpair()
        finally:
            socket.setdefaulttimeout(saved)
        self._socket, self.server = socket.socketpair()
        self._socket.setblocking(False)
        self.sent: list[str] = []
        self.answers: list[bytes] = []

    def queue(self, *requests: str, wake: bool = True) -> None:
        for request in requests:
            self.client._queue.append(request)
            if wake:
                self._write_sock.send(b"\0")

    def _send_request(self, read_timeout: float, connect_timeout: float) -> None:  # kazoo's, one request
        self.sent.append(self.client._queue.popleft())
        self._read_sock.recv(1)  # blocks if the byte is not there: a burst must never get here then

    def _read_socket(self, read_timeout: float) -> Any:  # kazoo's, one answer
        self._socket.setblocking(True)
        try:
            answer = self._socket.recv(4, socket.MSG_WAITALL)
        finally:
            self._socket.setblocking(False)
        self.answers.append(answer)
        return CLOSE_RESPONSE if answer == b"CLOS" else None


def test_a_turn_sends_every_request_already_woken_and_leaves_the_rest_to_their_bytes() -> None:
    c = Connection()
    assert use_bursts(c)
    c.queue("a", "b", "c")
    c.queue("d", wake=False)  # queued, its byte not written yet
    c._send_request(1.0, 1.0)
    assert c.sent == ["a", "b", "c"] and list(c.client._queue) == ["d"]
    c._write_sock.send(b"\0")
    c._send_request(1.0, 1.0)
    assert c.sent == ["a", "b", "c", "d"]


def test_a_turn_sends_at_most_a_burst() -> None:
    c = Connection()
    use_bursts(c)
    c.queue(*[str(i) for i in range(BURST + 5)])
    c._send_request(1.0, 1.0)
    assert len(c.sent) == BURST
    c._send_request(1.0, 1.0)
    assert len(c.sent) == BURST + 5


def test_a_turn_reads_the_answers_already_arrived_and_stops_at_the_close_answer() -> None:
    c = Connection()
    use_bursts(c)
    c.server.sendall(b"ans1ans2ans3")
    assert c._read_socket(1.0) is None
    assert c.answers == [b"ans1", b"ans2", b"ans3"]
    c.server.sendall(b"ans4CLOSans5")
    assert c._read_socket(1.0) == CLOSE_RESPONSE
    assert c.answers[3:] == [b"ans4", b"CLOS"]  # the loop ends on it; nothing after it is read
    c.server.sendall(b"x" * 4 * (BURST + 2))
    c._read_socket(1.0)
    assert len(c.answers) == 5 + BURST  # at most a burst per turn: sends get their turn too


def test_a_tls_connection_keeps_one_answer_per_turn() -> None:
    c = Connection()
    c.client.use_ssl = True
    use_bursts(c)
    c.server.sendall(b"ans1ans2")
    c._read_socket(1.0)
    assert c.answers == [b"ans1"]


def test_a_closed_peer_ends_the_burst_and_is_left_to_the_loop() -> None:
    c = Connection()
    use_bursts(c)
    c.server.sendall(b"ans1")
    c.server.close()
    assert c._read_socket(1.0) is None and c.answers == [b"ans1"]  # the peek saw b"" (closed): stop


def test_a_wake_up_pipe_with_a_default_timeout_is_looked_at_without_waiting() -> None:
    import time

    c = Connection(default_timeout=2.0)
    use_bursts(c)
    c.queue("a")
    c.queue("b", wake=False)  # queued, its byte not written yet: the burst must not wait for it
    began = time.monotonic()
    c._send_request(1.0, 1.0)
    assert c.sent == ["a"] and time.monotonic() - began < 0.5
    c.queue("c")  # b's byte has not come, c's has: b goes out on it, in queue order, as kazoo would
    c._send_request(1.0, 1.0)
    assert c.sent == ["a", "b"]


def test_a_read_burst_ends_within_a_tenth_of_the_read_timeout() -> None:
    c = Connection()
    use_bursts(c)
    c.server.sendall(b"x" * 4 * 20)
    real = c._zkc_read_one  # type: ignore[attr-defined]

    def slow(read_timeout: float) -> Any:
        import time

        time.sleep(0.02)
        return real(read_timeout)

    c._zkc_read_one = slow  # type: ignore[attr-defined]
    c._read_socket(0.5)  # a tenth: 50 ms, so about three answers of 20 ms each
    assert 2 <= len(c.answers) <= 4


def test_bursts_are_installed_once() -> None:
    c = Connection()
    assert use_bursts(c) and use_bursts(c)
    c.queue("a", "b")
    c._send_request(1.0, 1.0)
    assert c.sent == ["a", "b"]
