"""ConsumerConnector on the real cluster: znodes, range splits, joins/leaves, offsets, timeouts."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

from harness import members
from harness.members import Recorder, committed_offsets, drain, keys_of, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector, ConsumerTimeout, Whitelist
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import batches, eager_io, internals, znodes
from zkconsumer.zookeeper.handler import PollHandler

pytestmark = pytest.mark.cluster

FAST = members.FAST


def connector(cluster, group: str, **props: object) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group,
            **FAST,
            **{k.replace("_", "."): v for k, v in props.items()},
        }
    )


def test_single_member_consumes_everything_with_exact_znodes(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=8)
    sent = produce(topic, 800, partitions=8)
    recorder = Recorder()
    with connector(cluster, group_id, consumer_id="c1", auto_commit_enable=False) as conn:
        streams = conn.create_message_streams({topic: 2})
        assert conn.consumer_id == f"{group_id}_c1"
        assert isinstance(conn._zk.handler, PollHandler)  # kazoo's select on poll(2), see handler.py
        assert conn._zk.handler.negotiated_session_timeout_ms == 6000  # read off the handshake
        connection = conn._zk._connection
        if internals.wanted():  # the tested kazoo: the batched loop (batches.py) over the eager writes
            assert connection._read.__func__ is batches._buffered_read
            assert connection._send_request.__func__ is batches._send_queued
            assert connection._write.__func__ is eager_io._eager_write
        else:  # ZKCONSUMER_KAZOO_BATCHES=0 (scripts/test.sh runs this file so too): kazoo's own loop
            assert not {"_read", "_write", "_send_request", "_read_socket"} & set(vars(connection))
        drain("c1", streams[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)

        # Registration: exact bytes, key order, timestamp as a string.
        data, stat = zk.get(znodes.member_path(group_id, conn.consumer_id))
        assert stat.ephemeralOwner != 0
        timestamp = json.loads(data)["timestamp"]
        assert re.fullmatch(r"\d{13}", timestamp)
        assert (
            data
            == (f'{{"version":1,"subscription":{{"{topic}":2}},"pattern":"static","timestamp":"{timestamp}"}}').encode()
        )
        # Owners: bare thread ids; range over threads c1-0, c1-1 gives 0-3 and 4-7.
        owners = owner_table(zk, group_id, [topic])
        assert owners == {(topic, p): f"{group_id}_c1-{0 if p < 4 else 1}" for p in range(8)}
        conn.commit_offsets()
        # Offsets: decimal next-offset, no padding or newline.
        for p in range(8):
            raw, _ = zk.get(znodes.offset_path(group_id, topic, p))
            assert raw == b"100"
    assert zk.exists(znodes.member_path(group_id, f"{group_id}_c1")) is None
    assert owner_table(zk, group_id, [topic]) == {}
    assert recorder.keys() == {k: 1 for k in keys_of(sent)}


def test_three_members_range_then_join_and_leave_exactly_once(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=12)
    recorder = Recorder()
    members: dict[str, ConsumerConnector] = {}
    sent: list = []

    def join(name: str, streams: int) -> None:
        conn = connector(cluster, group_id, consumer_id=name)
        members[name] = conn
        drain(name, conn.create_message_streams({topic: streams})[topic], recorder)

    def settle_and_produce(count: int) -> None:
        wait_for_balanced(zk, group_id, [topic], members=len(members))
        sent.extend(produce(topic, count, partitions=12, start=len(sent)))
        recorder.wait_for(keys_of(sent), timeout=60)

    try:
        join("a", 1)
        join("b", 2)
        join("c", 1)
        settle_and_produce(600)
        owners = owner_table(zk, group_id, [topic])
        # Range over sorted threads a-0, b-0, b-1, c-0: 3 partitions each.
        assert owners == {(topic, p): f"{group_id}_{['a-0', 'b-0', 'b-1', 'c-0'][p // 3]}" for p in range(12)}
        join("d", 1)
        settle_and_produce(600)
        members.pop("b").shutdown()
        settle_and_produce(600)
        members.pop("a").shutdown()
        settle_and_produce(600)
    finally:
        for conn in members.values():
            conn.shutdown()
    counts = recorder.keys()
    assert set(counts) == keys_of(sent)
    duplicates = {k: n for k, n in counts.items() if n > 1}
    assert not duplicates, f"clean membership changes must not re-deliver: {list(duplicates)[:5]}"


def test_restart_resumes_from_committed_offsets(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=4)
    first = produce(topic, 200, partitions=4)
    recorder = Recorder()
    with connector(cluster, group_id) as conn:
        drain("one", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(first), timeout=60)
    assert committed_offsets(zk, group_id, topic) == {p: 50 for p in range(4)}
    second = produce(topic, 200, partitions=4, start=200)
    with connector(cluster, group_id) as conn:
        drain("two", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(second), timeout=60)
    assert {d.offset for d in recorder.deliveries if d.member == "two"} == set(range(50, 100))
    assert committed_offsets(zk, group_id, topic) == {p: 100 for p in range(4)}


@pytest.mark.parametrize("reset,expect_first", [("smallest", 0), ("largest", 30)])
def test_auto_offset_reset_without_committed_offset(
    cluster, zk, topic_factory, produce, group_id, reset, expect_first
) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 30)
    recorder = Recorder()
    with connector(cluster, group_id, auto_offset_reset=reset) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        later = produce(topic, 5, start=30)
        recorder.wait_for(keys_of(later), timeout=60)
    assert min(d.offset for d in recorder.deliveries) == expect_first
    assert committed_offsets(zk, group_id, topic) == {0: 35}


def test_consumer_timeout_raises_and_iteration_continues(cluster, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=1)
    with connector(cluster, group_id, consumer_timeout_ms=300) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        began = time.monotonic()
        with pytest.raises(ConsumerTimeout):
            next(iter(stream))
        assert time.monotonic() - began >= 0.25
        produce(topic, 3)
        got = []
        while len(got) < 3:
            try:
                got.append(next(iter(stream)).offset())
            except ConsumerTimeout:
                continue
        assert got == [0, 1, 2]


def test_wildcard_picks_up_topic_created_later(cluster, zk, topic_factory, produce, group_id) -> None:
    prefix = f"wc{int(time.time() * 1000) % 10**8}"
    first = topic_factory(partitions=2, name=f"{prefix}.one")
    recorder = Recorder()
    with connector(cluster, group_id) as conn:
        streams = conn.create_message_streams_by_filter(Whitelist(f"{prefix}\\..*"), 2)
        data, _ = zk.get(znodes.member_path(group_id, conn.consumer_id))
        assert json.loads(data)["pattern"] == "white_list"
        drain("w", streams, recorder)
        sent = produce(first, 20, partitions=2)
        recorder.wait_for(keys_of(sent), timeout=60)
        second = topic_factory(partitions=3, name=f"{prefix}.two")
        sent2 = produce(second, 30, partitions=3)
        recorder.wait_for(keys_of(sent2), timeout=60)
        assert {t for t, _ in conn.owned_partitions()} == {first, second}


def test_added_partitions_are_assigned(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    recorder = Recorder()
    with connector(cluster, group_id) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        kafka.add_partitions(cluster.bootstrap_servers, topic, 5, zk=zk)  # zk: brokers before 1.0
        owners = wait_for_balanced(zk, group_id, [topic], members=1)
        assert sorted(p for _, p in owners) == [0, 1, 2, 3, 4]
        sent = produce(topic, 50, partitions=5)
        recorder.wait_for(keys_of(sent), timeout=60)


def test_slow_stream_does_not_stall_the_others(cluster, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    with connector(cluster, group_id, queued_max_message_chunks=1, fetch_message_max_bytes=1024) as conn:
        idle, busy = conn.create_message_streams({topic: 2})[topic]  # idle gets p0, busy gets p1
        sent = produce(topic, 4000, partitions=2, value_size=100)
        recorder = Recorder()
        drain("busy", [busy], recorder)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent if m.partition == 1}, timeout=60)
        assert all(d.partition == 1 for d in recorder.deliveries)
        drain("idle", [idle], recorder)  # now the stalled one drains too
        recorder.wait_for(keys_of(sent), timeout=60)


def test_shutdown_ends_iterators_from_another_thread(cluster, topic_factory, group_id) -> None:
    topic = topic_factory(partitions=1)
    conn = connector(cluster, group_id, consumer_timeout_ms=-1)
    stream = conn.create_message_streams({topic: 1})[topic][0]
    ended = threading.Event()

    def consume() -> None:
        for _ in stream:
            pass
        ended.set()

    threading.Thread(target=consume, daemon=True).start()
    time.sleep(0.3)
    conn.shutdown()
    conn.shutdown()  # idempotent
    assert ended.wait(10), "iterator did not end after shutdown"


def test_fetch_false_member_owns_and_commits_positions(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=4)
    produce(topic, 40, partitions=4)
    with (
        connector(cluster, group_id, consumer_id="driver") as driver,
        connector(cluster, group_id, consumer_id="reader") as reader,
    ):
        empty = ConsumerConnector(
            {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST}, fetch=False
        )
        driver.shutdown()  # replaced by the fetch=False member below
        try:
            streams = empty.create_message_streams({topic: 1})[topic]
            drain("reader", reader.create_message_streams({topic: 1})[topic], Recorder())
            owners = wait_for_balanced(zk, group_id, [topic], members=2)
            mine = {k for k, v in owners.items() if v.startswith(empty.consumer_id)}
            assert set(empty.owned_partitions()) == mine and len(mine) == 2
            assert set(empty.owned_positions().values()) == {-1}  # nothing committed, nothing resolved
            with pytest.raises(ConsumerTimeout):
                next(iter(streams[0]))  # owns partitions, reads none
            theirs = {k for k in owners if k not in mine}
            result = empty.commit_positions({**{k: 7 for k in mine}, **{k: 9 for k in theirs}})
            assert result == {**{k: True for k in mine}, **{k: False for k in theirs}}  # fenced
            offsets = committed_offsets(zk, group_id, topic)
            assert all(offsets[p] == 7 for _, p in mine)
        finally:
            empty.shutdown()
