"""The member's ZooKeeper client on the real server: the granted session timeout, kazoo closing under
a running member, and the stock kazoo path (kazoo's loop unpatched) doing everything the patched one does."""

from __future__ import annotations

import time

import pytest
from kazoo.protocol.connection import ConnectionHandler

from harness import members
from harness.members import Recorder, committed_offsets, drain, keys_of, wait_for_balanced
from zkconsumer import ConsumerConnector, ConsumerError
from zkconsumer.errors import ZooKeeperClosed
from zkconsumer.zookeeper import internals, znodes

pytestmark = pytest.mark.cluster

FAST = members.FAST
# The test cluster's ZooKeeper caps sessions at maxSessionTimeout=60000 (testing/nodes.py).
SERVER_CAP_MS = 60000


def connector(cluster, group: str, **props: object) -> ConsumerConnector:
    return ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group, **FAST, **props})


@pytest.fixture(params=["patched", "stock"])
def kazoo_loop(request, monkeypatch) -> str:  # type: ignore[no-untyped-def]
    """Both kazoo paths: the batched loop on the tested kazoo, and stock kazoo (the switch off).

    The switch is set both ways: scripts/test.sh runs this file once more with it off for the process."""
    monkeypatch.setenv(internals.SWITCH, "0" if request.param == "stock" else "1")
    return str(request.param)


def test_the_lease_follows_the_timeout_the_server_granted(cluster, topic_factory, group_id, kazoo_loop) -> None:
    topic = topic_factory(partitions=1)
    with connector(cluster, group_id, **{"zookeeper.session.timeout.ms": 90000}) as conn:
        conn.create_message_streams({topic: 1})
        assert conn._zk.handler.negotiated_session_timeout_ms == SERVER_CAP_MS
        assert conn.membership.lease.session_timeout_s() == SERVER_CAP_MS / 1000
        patched = "_send_request" in vars(conn._zk._connection)
        assert patched is (kazoo_loop == "patched")


def test_a_kazoo_whose_handshake_plumbing_changed_still_gives_the_granted_timeout(
    cluster, topic_factory, group_id, monkeypatch
) -> None:
    # What kazoo's private _connect returns is no source: here it changes (kazoo itself only
    # uses a longer connect timeout), and the lease must not follow it past the real session.
    real = ConnectionHandler._connect

    def changed(self, *args):  # type: ignore[no-untyped-def]
        read_timeout, connect_timeout = real(self, *args)
        return read_timeout, connect_timeout * 2

    monkeypatch.setattr(ConnectionHandler, "_connect", changed)
    topic = topic_factory(partitions=1)
    with connector(cluster, group_id, **{"zookeeper.session.timeout.ms": 90000}) as conn:
        conn.create_message_streams({topic: 1})
        assert conn.membership.lease.session_timeout_s() == SERVER_CAP_MS / 1000


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # kazoo's thread dies on purpose
def test_kazoo_closing_under_a_running_member_makes_it_leave(cluster, zk, topic_factory, produce, group_id) -> None:
    # kazoo's connection thread dies (its own xid-mismatch RuntimeError, say): kazoo is CLOSED for
    # good. The member must not retry forever with its iterators blocked: every iterator raises
    # and the member leaves (its nodes go with its session, which nothing keeps alive any more).
    topic = topic_factory(partitions=2)
    sent = produce(topic, 20, partitions=2)
    recorder = Recorder()
    conn = connector(cluster, group_id, **{"consumer.timeout.ms": -1})
    try:
        streams = conn.create_message_streams({topic: 1})
        drain("c", streams[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        member = znodes.member_path(group_id, conn.consumer_id)
        assert zk.exists(member) is not None

        def broken(*_args: object) -> object:
            raise RuntimeError("xids mismatched")  # what kazoo raises inside its loop

        conn._zk._connection._read_socket = broken  # the next answer (a ping's, within 2 s) kills the loop
        deadline = time.monotonic() + 30
        while not recorder.errors and time.monotonic() < deadline:
            time.sleep(0.1)
        assert recorder.errors and isinstance(recorder.errors[0], ConsumerError)
        assert isinstance(conn.failure, ZooKeeperClosed)
        deadline = time.monotonic() + 6 + 10  # the session expires: nothing pings it
        while zk.exists(member) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert zk.exists(member) is None
    finally:
        conn.shutdown(timeout=5)


def test_stock_kazoo_runs_a_group_through_a_join_and_a_leave(
    cluster, zk, topic_factory, produce, group_id, monkeypatch
) -> None:
    monkeypatch.setenv(internals.SWITCH, "0")
    topic = topic_factory(partitions=6)
    recorder = Recorder()
    first = connector(cluster, group_id, **{"auto.commit.enable": False})
    second = None
    try:
        assert "_send_request" not in vars(first._zk._connection)  # kazoo's own loop
        drain("a", first.create_message_streams({topic: 2})[topic], recorder)
        second = connector(cluster, group_id, **{"auto.commit.enable": False})
        drain("b", second.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=2)  # settled first: no partition moves mid-read
        sent = produce(topic, 300, partitions=6)
        recorder.wait_for(keys_of(sent), timeout=60)
        first.commit_offsets()
        second.commit_offsets()
        assert committed_offsets(zk, group_id, topic) == {p: 50 for p in range(6)}
        second.shutdown()
        wait_for_balanced(zk, group_id, [topic], members=1)
    finally:
        first.shutdown()
        if second is not None:
            second.shutdown()
