"""poll_select keeps select.select's contract, and a kazoo client runs on PollHandler."""

from __future__ import annotations

import socket

import pytest

from zkconsumer.zookeeper.handler import PollHandler, make_handler, poll_select


def test_ready_objects_are_returned_as_given() -> None:
    a, b = socket.socketpair()
    try:
        assert poll_select([a], [], [], 0) == ([], [], [])
        assert poll_select([a], [a], [], 0) == ([], [a], [])  # an empty socket buffer is writable
        b.sendall(b"x")
        readable, writable, errors = poll_select([a, b.fileno()], [], [], 1.0)
        assert readable == [a] and writable == [] and errors == []
    finally:
        a.close()
        b.close()


def test_a_closed_peer_reads_as_ready() -> None:
    a, b = socket.socketpair()
    b.close()
    try:
        assert poll_select([a], [], [], 1.0)[0] == [a]  # the read then returns b"" (EOF)
        assert a.recv(1) == b""
    finally:
        a.close()


def test_timeout_waits_and_rejects_negative() -> None:
    a, b = socket.socketpair()
    try:
        import time

        began = time.monotonic()
        assert poll_select([a], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - began >= 0.04
        with pytest.raises(ValueError):
            poll_select([a], [], [], -1)
    finally:
        a.close()
        b.close()


def test_handler_uses_it() -> None:
    handler = make_handler()
    assert isinstance(handler, PollHandler)
    a, b = socket.socketpair()
    try:
        b.sendall(b"y")
        assert handler.select([a], [], [], 1.0)[0] == [a]
    finally:
        a.close()
        b.close()
