"""kazoo's connection loop with fewer system calls per request: queued requests go out in one send
per turn, and answers are read through one buffer filled by large recvs.

Each system call lets go of the GIL, and with tens of members in one process every let-go is a
wait to take it back. kazoo's loop makes about six per pipelined request: it reads the caller's
wake-up byte, sends the request, and reads each answer with two recvs (length, then body), with a
select around each. Here a turn of the loop reads every waiting wake-up byte in one recv and sends
every queued request (up to BATCH) in one send; and an answer is read from a buffer that one
recv fills with whatever has arrived, so a turn handles every complete answer that recv brought.

What kazoo's loop relies on is kept: a request leaves the queue for `_pending` only once written
(a write that fails leaves it queued, with a wake-up byte, as kazoo's does); a turn never waits
for a wake-up byte; a request left queued by the batch limit has a byte written for it, so the
loop's select comes back to it; and a turn leaves at most one incomplete answer in the buffer,
whose rest the socket will bring (the select watches the socket, not the buffer).
"""

from __future__ import annotations

import logging
import socket
import types
from typing import Any

from kazoo.exceptions import ConnectionDropped, SessionExpiredError
from kazoo.protocol import connection as kazoo_connection
from kazoo.protocol.serialization import Auth, Close, int_struct

from zkconsumer.zookeeper.eager_io import recv_eagerly
from zkconsumer.zookeeper.handler import poll_select

__all__ = ["BATCH", "RECV_SIZE", "use_batches"]

BATCH = 64  # requests per send at most: a long queue cannot keep the loop from reading answers
RECV_SIZE = 1 << 16  # bytes asked of one recv: every answer that has arrived, in the usual case
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class _Inbox:
    """Bytes read from one socket and not yet handed to kazoo (data[pos:])."""

    __slots__ = ("sock", "data", "pos")

    def __init__(self) -> None:
        self.sock: Any = None
        self.data = b""
        self.pos = 0


def _inbox(self: Any) -> _Inbox:
    """The connection's inbox, emptied when kazoo has opened a new socket since the last read."""
    box: _Inbox = self._zkc_inbox
    if box.sock is not self._socket:
        box.sock, box.data, box.pos = self._socket, b"", 0
    return box


def _has_answer(box: _Inbox) -> bool:
    """Whether the inbox holds a whole length-prefixed answer."""
    have = len(box.data) - box.pos
    return have >= 4 and have - 4 >= int.from_bytes(box.data[box.pos : box.pos + 4], "big", signed=True)


def _buffered_read(self: Any, length: int, timeout: float) -> bytes:
    """kazoo's ConnectionHandler._read from the inbox; a recv (of up to RECV_SIZE, polling only
    when it would block) only when the inbox holds fewer than `length` bytes."""
    box = _inbox(self)
    data, pos = box.data, box.pos
    have = len(data) - pos
    if have < length:
        parts = [data[pos:]]
        with self._socket_error_handling():
            while have < length:
                chunk = recv_eagerly(self, max(RECV_SIZE, length - have), timeout)
                parts.append(chunk)
                have += len(chunk)
        data, pos = b"".join(parts), 0
    box.data, box.pos = data, pos + length
    return data[pos : pos + length]


def _read_answers(self: Any, read_timeout: float) -> Any:
    """kazoo's _read_socket, then again while the inbox holds a whole answer; returns the last
    result, or the close answer (which ends kazoo's loop) as soon as it is read. No recv happens
    after the first answer, so a turn is bounded by what one recv brought."""
    read_one = self._zkc_read_one
    response = read_one(read_timeout)
    box = _inbox(self)
    while response != kazoo_connection.CLOSE_RESPONSE and _has_answer(box):
        response = read_one(read_timeout)
        box = _inbox(self)  # a connection reset by an answer's handling empties it
    return response


def _frame(request: Any, xid: int | None) -> bytes:
    """kazoo's _submit framing: length, xid, type, body."""
    body = bytearray()
    if xid:
        body += int_struct.pack(xid)
    if request.type:
        body += int_struct.pack(request.type)
    body += request.serialize()
    length: bytes = int_struct.pack(len(body))
    return length + bytes(body)


def _send_queued(self: Any, read_timeout: float, connect_timeout: float) -> None:
    """kazoo's _send_request for every queued request, up to BATCH, in one write."""
    client = self.client
    queue = client._queue
    try:  # every waiting wake-up byte at once; the select said there is one
        self._read_sock.recv(RECV_SIZE, _DONTWAIT)
    except OSError:  # none after all (a spurious wake-up): the queue says what to do
        pass
    # Only this thread takes from the queue (callers append): its head stays put until popped
    # below, and indexing it, unlike iterating, is not upset by an append meanwhile.
    head = [queue[i] for i in range(min(len(queue), BATCH))]
    frames: list[bytes] = []
    taken: list[tuple[Any, Any, int]] = []
    debug = self.logger.isEnabledFor(logging.DEBUG)
    for request, async_object in head:
        if request is kazoo_connection._SESSION_EXPIRED or request is kazoo_connection._CONNECTION_DROP:  # test hooks
            if frames:
                break  # send what precedes it; the next turn meets it first
            if request is kazoo_connection._SESSION_EXPIRED:
                raise SessionExpiredError("Session expired: Testing")
            raise ConnectionDropped("Connection dropped: Testing")
        if request.type == Auth.type:
            xid = kazoo_connection.AUTH_XID
        else:
            self._xid = (self._xid % 2147483647) + 1
            xid = self._xid
        if debug:
            self.logger.debug("Sending request(xid=%s): %s", xid, request)
        frames.append(_frame(request, xid))
        taken.append((request, async_object, xid))
        if request.type == Close.type:
            break  # the session ends with it: what a caller queued after it is failed at the close
    if not frames:
        return
    try:
        self._write(b"".join(frames), connect_timeout)
    except BaseException:
        _wake(self)  # the batch stays queued, and its bytes were read above
        raise
    for entry in taken:
        queue.popleft()
        client._pending.append(entry)
    if queue:  # behind the batch, their bytes read above (or queued since): come back for them
        _wake(self)


def _wake(self: Any) -> None:
    """Write one wake-up byte for the loop, without ever waiting: callers may have filled the pipe,
    and then the loop is awake anyway."""
    write_sock = self._write_sock
    if write_sock is None:
        return
    if write_sock.gettimeout() is not None and not poll_select([], [write_sock], [], 0)[1]:
        return  # full: a pipe with a default socket timeout would wait for room despite MSG_DONTWAIT
    try:
        write_sock.send(b"\0", _DONTWAIT)
    except OSError:  # full (awake already), or closing: the close path fails what is queued
        pass


def use_batches(connection: Any) -> bool:
    """Give this kazoo ConnectionHandler (`client._connection`) the batched send and the buffered
    read (once; again is a no-op); False, leaving it as it is, for a kazoo without what they rely
    on, or on a platform without non-blocking sends (Windows). A TLS connection keeps kazoo's
    reads: a TLS socket can hold decrypted bytes that no select on it reports, so reads there stay
    sized to the answer."""
    if not _DONTWAIT:  # no non-blocking send on the pipe (Windows): the loop could block on its own wake-up
        return False
    needed = (
        "_send_request",
        "_read_socket",
        "_read",
        "_read_sock",
        "_write_sock",
        "_socket",
        "_xid",
        "client",
        "logger",
    )
    if not all(hasattr(connection, name) for name in needed):
        return False
    client = connection.client
    if not (hasattr(client, "_queue") and hasattr(client, "_pending")):
        return False
    if not all(
        hasattr(kazoo_connection, name)
        for name in ("_SESSION_EXPIRED", "_CONNECTION_DROP", "AUTH_XID", "CLOSE_RESPONSE")
    ):
        return False  # another kazoo: the turn meets its queue's test hooks by these names
    if hasattr(connection, "_zkc_inbox"):
        return True
    connection._zkc_inbox = _Inbox()
    connection._send_request = types.MethodType(_send_queued, connection)
    if not getattr(client, "use_ssl", False):
        connection._read = types.MethodType(_buffered_read, connection)
        connection._zkc_read_one = connection._read_socket
        connection._read_socket = types.MethodType(_read_answers, connection)
    return True
