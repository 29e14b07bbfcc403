"""Hardening beyond the Scala consumer, one test per guarantee, each failing without its mechanism."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from kazoo.client import KazooState
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness import members
from harness.members import Recorder, committed_offsets, drain, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector, ConsumerRebalanceFailed, ConsumerTimeout
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "rebalance.backoff.ms": 300}


def member(cluster, group: str, **props: object) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group,
            **FAST,
            **{k.replace("_", "."): v for k, v in props.items()},
        }
    )


def scrape(conn: ConsumerConnector) -> dict[str, float]:
    """The connector's Prometheus samples by name (labels dropped; one connector, one topic)."""
    registry = CollectorRegistry()
    registry.register(conn.metrics())
    text = generate_latest(registry).decode()
    return {
        s.name: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.labels.get("result", "failed") == "failed"
    }


def owner_czxids(zk, group: str, topic: str) -> dict[int, int]:  # type: ignore[no-untyped-def]
    folder = znodes.owners_path(group, topic)
    return {int(c): zk.exists(f"{folder}/{c}").czxid for c in zk.get_children(folder)}


@pytest.mark.parametrize("incremental", [True, False])
def test_only_moved_partitions_stop(cluster, zk, topic_factory, group_id, incremental) -> None:
    topic = topic_factory(partitions=6)
    with member(cluster, group_id, consumer_id="a", zkconsumer_rebalance_incremental=incremental) as a:
        a.create_message_streams({topic: 1})
        wait_for_balanced(zk, group_id, [topic], members=1)
        before = owner_czxids(zk, group_id, topic)
        with member(cluster, group_id, consumer_id="b", zkconsumer_rebalance_incremental=incremental) as b:
            b.create_message_streams({topic: 1})
            owners = wait_for_balanced(zk, group_id, [topic], members=2)
            kept = [p for (_, p), thread in owners.items() if thread == f"{group_id}_a-0"]
            assert kept == [0, 1, 2]
            after = owner_czxids(zk, group_id, topic)
            unchanged = [p for p in kept if after[p] == before[p]]
            # Incremental: a's kept owner nodes were never released (same creation zxid).
            assert unchanged == (kept if incremental else [])


def test_a_zookeeper_outage_delivers_under_the_lease_then_pauses_until_the_session_is_confirmed(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    """A lost link alone does not stop delivery: the lease does (it ends before the server could
    expire the session). Once it has run out nothing is delivered until ZooKeeper confirms the
    session again."""
    if not hasattr(cluster, "zookeeper"):
        pytest.fail("needs the local jar cluster (ZKCONSUMER_CLUSTER=local)")
    topic = topic_factory(partitions=1)
    recorder = Recorder()
    with member(cluster, group_id, zookeeper_session_timeout_ms=10000) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        first = produce(topic, 10)
        recorder.wait_for({(topic, 0, m.offset) for m in first}, timeout=30)
        cluster.zookeeper.kill()  # the brokers keep serving meanwhile
        try:
            time.sleep(1.5)  # kazoo notices: SUSPENDED
            during = produce(topic, 10, start=10)
            recorder.wait_for({(topic, 0, m.offset) for m in during}, timeout=5)  # the lease still holds
            deadline = time.monotonic() + 12.0
            while conn.ownership_confirmed():  # 0.9 x 10 s after the renewal before the last confirmed one
                assert time.monotonic() < deadline, "the lease outlived the session timeout"
                time.sleep(0.1)
            after = produce(topic, 10, start=20)
            time.sleep(2.0)
            delivered_unconfirmed = [d for d in recorder.deliveries if d.offset >= 20]
        finally:
            cluster.zookeeper.start()
        assert delivered_unconfirmed == [], "delivered after the lease ran out"
        recorder.wait_for({(topic, 0, m.offset) for m in after}, timeout=60)
        assert conn.group.is_registered()


def test_an_owner_node_deleted_and_taken_by_another_stops_delivery_at_once_without_the_watchdog(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    """A Scala member acting on a stale registry deletes our owner node without a check and another
    claimant creates it: the data watch on our node stops delivery of that partition at once, and
    once the claimant lets go the member claims it again by itself (no watchdog)."""
    topic = topic_factory(partitions=1)
    recorder = Recorder()
    with member(cluster, group_id, zkconsumer_watchdog_interval_ms=0) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        owners = wait_for_balanced(zk, group_id, [topic], members=1)
        first = produce(topic, 10)
        recorder.wait_for({(topic, 0, m.offset) for m in first}, timeout=30)
        path = znodes.owner_path(group_id, topic, 0)
        zk.delete(path)  # blind, as Scala's deletePath (KAFKA-262)
        zk.create(path, znodes.encode_owner(f"{group_id}_scala-0"), ephemeral=True)
        deadline = time.monotonic() + 10
        while (info := conn.assignment.get((topic, 0))) is not None and info.active:
            assert time.monotonic() < deadline, "delivery of the taken partition never stopped"
            time.sleep(0.05)
        during = produce(topic, 10, start=10)
        time.sleep(3.0)
        assert [d for d in recorder.deliveries if d.offset >= 10] == [], "delivered a partition another session owned"
        zk.delete(path)  # the other claimant lets go
        recorder.wait_for({(topic, 0, m.offset) for m in during}, timeout=60)
        assert owner_table(zk, group_id, [topic]) == owners


def test_a_fence_node_deleted_or_written_by_hand_costs_one_attempt_in_an_idle_group(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    """Every commit opens with check(fence node, 0). A fence node deleted by hand, or written to by
    hand (its version moves), fails that check: the refused commit makes the member register and
    fence again, so commits resume although nothing in the group changes."""
    topic = topic_factory(partitions=1)
    recorder = Recorder()
    with member(cluster, group_id, auto_commit_interval_ms=200, zkconsumer_watchdog_interval_ms=0) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        for round_, meddle in enumerate((zk.delete, lambda path: zk.set(path, b"edited"))):
            fence = conn.group.fence
            assert fence is not None
            meddle(fence.path)
            sent = produce(topic, 5, start=5 * round_)
            recorder.wait_for({(topic, 0, m.offset) for m in sent}, timeout=30)
            end = sent[-1].offset + 1
            deadline = time.monotonic() + 20
            while committed_offsets(zk, group_id, topic).get(0) != end:
                assert time.monotonic() < deadline, (
                    f"commits never resumed after the fence node was meddled with ({round_})"
                )
                time.sleep(0.1)
            assert conn.group.fence is not None and conn.group.fence.path != fence.path


class FailureListener:
    def __init__(self) -> None:
        self.failures: list[Exception] = []

    def before_releasing_partitions(self, partitions) -> None: ...  # type: ignore[no-untyped-def]

    def before_starting_fetchers(self, consumer_id, assignment) -> None: ...  # type: ignore[no-untyped-def]

    def on_rebalance_failed(self, error: Exception) -> None:
        self.failures.append(error)


def test_failed_first_rebalance_leaves_nothing_behind(cluster, zk, topic_factory, group_id) -> None:
    topic = topic_factory(partitions=3)
    zk.create(znodes.owner_path(group_id, topic, 2), b"g_somebody-0", makepath=True)  # stale, persistent
    listener = FailureListener()
    conn = member(cluster, group_id, rebalance_max_retries=2)
    conn.listener = listener
    with pytest.raises(ConsumerRebalanceFailed):
        conn.create_message_streams({topic: 1})
    # All or nothing: partitions 0 and 1 were free, yet no owner node of ours was left behind.
    assert owner_table(zk, group_id, [topic]) == {(topic, 2): "g_somebody-0"}
    assert zk.get_children(znodes.ids_path(group_id)) == []  # and it left the group: no zombie
    assert len(listener.failures) == 1


def test_failed_rebalance_is_retried_without_any_event(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    blocker = znodes.owner_path(group_id, topic, 2)
    listener = FailureListener()
    recorder = Recorder()
    conn = member(
        cluster,
        group_id,
        rebalance_max_retries=2,
        zkconsumer_rebalance_recheck_ms=500,
        zkconsumer_watchdog_interval_ms=0,
    )
    conn.listener = listener
    with conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        zk.create(blocker, b"g_somebody-0")  # stale node in the way of a new partition
        kafka.add_partitions(cluster.bootstrap_servers, topic, 3)
        deadline = time.monotonic() + 30
        while not listener.failures:
            assert time.monotonic() < deadline, "the blocked rebalance never gave up its attempts"
            time.sleep(0.1)
        while scrape(conn)["zkconsumer_rebalance_failing"] < 1:  # the alertable "retrying" signal
            assert time.monotonic() < deadline, "the failed round never showed in the metrics"
            time.sleep(0.1)
        kept = produce(topic, 20, partitions=2)  # partitions it kept go on (incremental)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in kept}, timeout=30)
        zk.delete(blocker)  # no ZooKeeper event reaches the member now
        owners = wait_for_balanced(zk, group_id, [topic], members=1, timeout=30)
        assert sorted(p for _, p in owners) == [0, 1, 2]
        while scrape(conn)["zkconsumer_rebalance_failing"] != 0:  # the run ends just after its claim
            assert time.monotonic() < deadline, "the succeeded round never cleared the failing gauge"
            time.sleep(0.05)
        samples = scrape(conn)
        assert samples["zkconsumer_rebalances_total"] >= 1
        assert samples["zkconsumer_owned_partitions"] == 3


@contextlib.contextmanager
def consumed_twenty(cluster, group_id: str, topic: str, produce, recorder: Recorder):  # type: ignore[no-untyped-def]
    """A member without auto-commit that has delivered offsets 0..19 of the 1-partition topic."""
    produce(topic, 20)
    with member(cluster, group_id, auto_commit_enable=False) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for({(topic, 0, o) for o in range(20)}, timeout=30)
        yield conn


def test_commits_are_fenced_by_owner_node(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=1)
    recorder = Recorder()
    with consumed_twenty(cluster, group_id, topic, produce, recorder) as conn:
        conn.commit_offsets()
        assert committed_offsets(zk, group_id, topic) == {0: 20}
        produce(topic, 5, start=20)
        recorder.wait_for({(topic, 0, o) for o in range(20, 25)}, timeout=30)
        # Another member now owns the partition and committed 5; our commit of 25 comes before or
        # after the watch on our owner node stopped delivery, and must be refused either way.
        zk.delete(znodes.owner_path(group_id, topic, 0))
        zk.create(znodes.owner_path(group_id, topic, 0), b"g_other-0")
        zk.set(znodes.offset_path(group_id, topic, 0), b"5")
        conn.commit_offsets()
        assert committed_offsets(zk, group_id, topic) == {0: 5}, "overwrote the new owner's offset"
        zk.delete(znodes.owner_path(group_id, topic, 0))


def test_garbled_peer_registration_does_not_stall_the_group(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    zk.create(znodes.member_path(group_id, f"{group_id}_garbled"), b"{not json", ephemeral=True, makepath=True)
    recorder = Recorder()
    with member(cluster, group_id) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        sent = produce(topic, 20, partitions=2)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent}, timeout=30)
        assert len(conn.owned_partitions()) == 2
    zk.delete(znodes.member_path(group_id, f"{group_id}_garbled"))


def test_stale_registration_of_a_previous_process_is_waited_out(cluster, zk, topic_factory, group_id) -> None:
    topic = topic_factory(partitions=1)
    ghost = cluster.zk_client()  # the previous process: its session is still alive for a moment
    ghost.create(znodes.member_path(group_id, f"{group_id}_fixed"), b"{}", ephemeral=True, makepath=True)
    threading.Timer(1.0, lambda: (ghost.stop(), ghost.close())).start()
    began = time.monotonic()
    with member(cluster, group_id, consumer_id="fixed") as conn:
        conn.create_message_streams({topic: 1})
        assert conn.group.is_registered()
    assert time.monotonic() - began >= 0.9


def test_a_dropped_link_goes_on_delivering_under_the_lease(cluster, topic_factory, produce, group_id) -> None:
    # SUSPENDED: the session may be alive, and the lease ends before it could expire, so delivery
    # goes on (a lapsed lease pausing it: test_lapsed_session_lease_holds_delivery).
    topic = topic_factory(partitions=1)
    with member(cluster, group_id, consumer_timeout_ms=200) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        produce(topic, 3)
        assert next(iter(stream)).offset() == 0
        conn.membership.on_connection_state(KazooState.SUSPENDED)
        assert next(iter(stream)).offset() == 1
        conn.membership.on_connection_state(KazooState.CONNECTED)  # the same session
        assert next(iter(stream)).offset() == 2


def test_lapsed_session_lease_holds_delivery(cluster, topic_factory, produce, group_id) -> None:
    # What a process frozen past its session timeout sees on waking: the lease has run out.
    topic = topic_factory(partitions=1)
    with member(cluster, group_id, consumer_timeout_ms=300) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        produce(topic, 2)
        assert next(iter(stream)).offset() == 0
        gate = conn.rebalancer.streams.gate
        gate.renew(gate.clock() - 1)
        with pytest.raises(ConsumerTimeout, match="paused"):
            next(iter(stream))
        conn.membership.renew_lease()  # a confirmed round trip in the same session
        assert next(iter(stream)).offset() == 1


def test_partitions_whose_fetch_failed_to_start_are_not_owned_idle(
    cluster, zk, topic_factory, produce, group_id, monkeypatch
) -> None:
    from confluent_kafka import KafkaError, KafkaException

    from zkconsumer.consumer.fetcher import Fetcher

    topic = topic_factory(partitions=2)
    real_add = Fetcher.add
    failures = []

    def flaky_add(self, infos):  # type: ignore[no-untyped-def]
        if not failures:  # the first start of the new partitions fails, as with stale metadata
            failures.append(True)
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, "injected"))
        return real_add(self, infos)

    recorder = Recorder()
    with member(cluster, group_id) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        monkeypatch.setattr(Fetcher, "add", flaky_add)
        kafka.add_partitions(cluster.bootstrap_servers, topic, 3)
        sent = produce(topic, 30, partitions=3)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent}, timeout=30)
        assert failures and set(conn.owned_partitions()) == {(topic, 0), (topic, 1), (topic, 2)}


def test_offsets_of_a_deleted_topic_are_not_reused(cluster, zk, produce, group_id) -> None:
    topic = f"recreated-{group_id[-12:]}"
    cluster.create_topic(topic, 1)
    produce(topic, 30)
    recorder = Recorder()
    with member(cluster, group_id) as conn:
        drain("old", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for({(topic, 0, o) for o in range(30)}, timeout=30)
    assert committed_offsets(zk, group_id, topic) == {0: 30}
    kafka.delete_topic(cluster.bootstrap_servers, topic)
    deadline = time.monotonic() + 60
    while zk.exists(znodes.topic_path(topic)) is not None:
        assert time.monotonic() < deadline, "topic deletion never finished"
        time.sleep(0.2)
    cluster.create_topic(topic, 1)
    produce(topic, 40)  # the new incarnation outgrows the stale committed offset 30
    fresh = Recorder()
    with member(cluster, group_id) as conn:
        drain("new", conn.create_message_streams({topic: 1})[topic], fresh)
        fresh.wait_for({(topic, 0, o) for o in range(40)}, timeout=30)  # from 0, not from 30


def test_message_larger_than_the_fetch_size_does_not_stall_its_partition(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    # Scala's iterator throws MessageSizeTooLargeException and the partition never moves on; the
    # fetcher (librdkafka, fetch protocol v3+) returns a too-large first batch whole instead.
    topic = topic_factory(partitions=1)
    big = produce(topic, 1, value_size=64 * 1024)  # 64x fetch.message.max.bytes
    small = produce(topic, 20, start=1)
    recorder = Recorder()
    with member(cluster, group_id, fetch_message_max_bytes=1024) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for({(topic, 0, m.offset) for m in big + small}, timeout=30)
    assert [d.offset for d in recorder.deliveries][:21] == list(range(21))


def test_a_commit_overtaken_by_the_topics_recreation_is_withdrawn(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    # The incarnation check runs just before a commit; the topic is deleted and created again
    # between that check and the write (on a loaded machine this took a 200-event chaos run to
    # hit). The old position (20) must not survive: written after the new topic node, it would
    # look current to read_offsets and the next owner would skip the new topic's first 20.
    topic = topic_factory(partitions=1)
    recorder = Recorder()
    with consumed_twenty(cluster, group_id, topic, produce, recorder) as conn:
        real_commit = conn.group.commit_offsets

        def recreate_then_commit(offsets, owners):  # type: ignore[no-untyped-def]
            kafka.delete_topic(cluster.bootstrap_servers, topic)
            deadline = time.monotonic() + 60
            while zk.exists(znodes.topic_path(topic)) or zk.exists(f"/admin/delete_topics/{topic}"):
                assert time.monotonic() < deadline, "topic deletion did not finish"
                time.sleep(0.1)
            cluster.create_topic(topic, 1, 1)
            return real_commit(offsets, owners)

        conn.group.commit_offsets = recreate_then_commit  # type: ignore[method-assign]
        conn.commit_offsets()
        conn.group.commit_offsets = real_commit  # type: ignore[method-assign]
        assert committed_offsets(zk, group_id, topic) == {}, "the old topic's position survived"
        sent = produce(topic, 5)  # the new topic's first messages: all delivered
        deadline = time.monotonic() + 30
        while {o for o in range(5)} - {d.offset for d in recorder.deliveries[20:]}:
            assert time.monotonic() < deadline, f"new topic's messages missing: {recorder.deliveries[20:]}"
            time.sleep(0.1)
        assert [m.offset for m in sent] == list(range(5))
