"""zkio: connecting to an unreachable ZooKeeper fails cleanly; deadlines bound the remaining time."""

from __future__ import annotations

import socket
import time

import pytest

from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper.deadline import Deadline


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_zookeeper_is_a_clear_connection_error() -> None:
    port = closed_port()
    began = time.monotonic()
    with pytest.raises(ConnectionError, match=f"cannot reach ZooKeeper at 127.0.0.1:{port} within 500 ms") as caught:
        ConsumerConnector(
            {"zookeeper.connect": f"127.0.0.1:{port}", "group.id": "g", "zookeeper.connection.timeout.ms": 500}
        )
    assert time.monotonic() - began < 5
    assert "Cannot close" not in str(caught.value), "the cleanup after the timeout failed"


def test_a_deadline_caps_and_runs_out() -> None:
    unbounded = Deadline(None)
    assert unbounded.remaining(3.0) == 3.0 and not unbounded.expired()
    soon = Deadline(0.05)
    assert 0 < soon.remaining(10.0) <= 0.05
    time.sleep(0.06)
    assert soon.expired() and soon.remaining(10.0) == 0.0
