"""The fetcher against a real broker: routing, start offsets, out-of-range resets, backpressure."""

from __future__ import annotations

import logging
import threading
import time

import confluent_kafka
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from harness.fetching import assert_nothing_more, drain, infos_for, triples
from zkconsumer.consumer.chunks import Message, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.consumer.fetcher import FetchSettings

pytestmark = pytest.mark.cluster


def test_fetches_all_partitions_into_two_queues(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=8)
    sent = produce(topic, 8000, partitions=8)
    queues = [StreamQueue(2, "s0"), StreamQueue(2, "s1")]
    infos = infos_for(topic, range(4), queues[0]) + infos_for(topic, range(4, 8), queues[1])
    f = make_fetcher(batch_size=300)
    f.assign(infos)
    results: dict[int, list[Message]] = {}

    def consume(i: int) -> None:
        results[i] = drain(ConsumerIterator(queues[i], 200), 4000)

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert triples(results[0]) == triples(m for m in sent if m.partition < 4)
    assert triples(results[1]) == triples(m for m in sent if m.partition >= 4)
    for msgs in results.values():  # per-partition order is the log order
        for p in {m.partition for m in msgs}:
            offsets = [m.offset for m in msgs if m.partition == p]
            assert offsets == list(range(1000))
    assert all(m.topic == topic and m.key is None and m.timestamp and m.timestamp > 0 for m in results[0])
    assert {i.fetched_offset for i in infos} == {1000}
    assert f.assigned() == {(topic, p) for p in range(8)}
    deadline = time.monotonic() + 10
    while f.lag() != {(topic, p): 0 for p in range(8)} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f.lag() == {(topic, p): 0 for p in range(8)}
    assert {t.name for t in threading.enumerate()} >= {"f0-fetcher"}


def test_starts_at_the_committed_offset(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    sent = produce(topic, 100, partitions=1)
    q = StreamQueue(2, "s")
    f = make_fetcher()
    f.assign(infos_for(topic, [0], q, offset=37))
    got = drain(ConsumerIterator(q, 200), 63)
    assert [m.value for m in got] == [m.value for m in sent[37:]]


@pytest.mark.parametrize("policy", ["smallest", "largest"])
def test_no_committed_offset_follows_auto_offset_reset(make_fetcher, topic_factory, produce, caplog, policy) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 40, partitions=2)
    q = StreamQueue(2, "s")
    infos = infos_for(topic, [0, 1], q, offset=-1)
    f = make_fetcher(auto_offset_reset=policy)
    with caplog.at_level(logging.INFO, logger="zkconsumer.consumer.fetcher"):
        f.assign(infos)
    start = 0 if policy == "smallest" else 20
    assert [(i.consumed_offset, i.committed_offset) for i in infos] == [(start, -1)] * 2
    # The fetch thread may have fetched the 20 messages of each partition by now.
    assert all(start <= i.fetched_offset <= 20 for i in infos), [i.fetched_offset for i in infos]
    assert f"{topic}-0: no committed offset, starting at {start} (auto.offset.reset={policy})" in caplog.text
    it = ConsumerIterator(q, 200)
    if policy == "smallest":
        assert len(drain(it, 40)) == 40
    more = produce(topic, 10, partitions=2, start=40)
    assert triples(drain(it, 10)) == triples(more)
    assert_nothing_more(it)


def _delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, before)])
    for fut in futures.values():
        fut.result(30)


@pytest.mark.parametrize("policy", ["smallest", "largest"])
@pytest.mark.parametrize("where", ["beyond_end", "below_start"])
def test_out_of_range_resets_both_offsets(make_fetcher, cluster, topic_factory, produce, caplog, policy, where) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 200, partitions=2)  # offsets 0..99 in each partition
    low = 0
    if where == "below_start":
        low = 60
        _delete_records(cluster.bootstrap_servers, topic, 0, low)
    q = StreamQueue(2, "s")
    infos = infos_for(topic, [0], q, offset=5000 if where == "beyond_end" else 10)
    infos += infos_for(topic, [1], q, offset=90)  # a healthy neighbour keeps flowing
    f = make_fetcher(auto_offset_reset=policy)
    it = ConsumerIterator(q, 200)
    with caplog.at_level(logging.WARNING, logger="zkconsumer.consumer.fetcher"):
        f.assign(infos)
        got = drain(it, 10 + (100 - low if policy == "smallest" else 0))
        deadline = time.monotonic() + 10
        while "out of range" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    old = 5000 if where == "beyond_end" else 10
    new = low if policy == "smallest" else 100
    assert (
        f"{topic}-0: offset {old} out of range [{low}, 100); reset fetched and consumed offset to {new} "
        f"(auto.offset.reset={policy})" in caplog.text
    )
    expected = [m for m in sent if m.partition == 1 and m.offset >= 90]
    if policy == "smallest":
        expected += [m for m in sent if m.partition == 0 and m.offset >= low]
    assert triples(got) == triples(expected)
    it.mark_consumed()  # the last message handed out counts once the next is asked for
    assert infos[0].consumed_offset == 100 and infos[0].fetched_offset == 100
    more = produce(topic, 4, partitions=2, start=200)
    assert triples(drain(it, 4)) == triples(more)  # the reset partition is fetched again
    assert_nothing_more(it)


def test_backpressure_pauses_only_the_full_stream(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 4000, partitions=2)
    slow, fast = StreamQueue(1, "slow"), StreamQueue(1, "fast")
    f = make_fetcher(batch_size=50, queued_max_message_chunks=1)
    f.assign(infos_for(topic, [0], slow) + infos_for(topic, [1], fast))
    fast_it = ConsumerIterator(fast, 200)
    assert triples(drain(fast_it, 2000)) == triples(m for m in sent if m.partition == 1)
    assert len(slow) == 1  # full, never drained: the fetcher holds the rest and paused partition 0
    deadline = time.monotonic() + 5
    while (topic, 0) not in f._router.paused and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f._router.paused == {(topic, 0)}
    more = produce(topic, 100, partitions=2, start=4000)
    assert triples(drain(fast_it, 50)) == triples(m for m in more if m.partition == 1)
    slow_got = drain(ConsumerIterator(slow, 200), 2050)
    assert [m.offset for m in slow_got] == list(range(2050))
    assert triples(slow_got) == triples(m for m in sent + more if m.partition == 0)
    assert f._router.paused == set() and not f._router.held


def test_many_partitions_share_one_small_queue(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=8)
    sent = produce(topic, 8000, partitions=8)
    q = StreamQueue(1, "s")
    f = make_fetcher(batch_size=64, queued_max_message_chunks=1)
    f.assign(infos_for(topic, range(8), q))
    it = ConsumerIterator(q, 200)
    got = []
    for _ in range(8000):  # a slow consumer: every partition hits the full queue over and over
        got += drain(it, 1)
        if len(got) % 500 == 0:
            time.sleep(0.05)
    assert triples(got) == triples(sent)
    assert_nothing_more(it)


def test_assign_replaces_add_and_remove_are_incremental(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=3)
    sent = produce(topic, 30, partitions=3)
    q = StreamQueue(2, "s")
    it = ConsumerIterator(q, 200)
    f = make_fetcher()
    f.assign(infos_for(topic, [0], q))
    assert triples(drain(it, 10)) == triples(m for m in sent if m.partition == 0)
    f.assign(infos_for(topic, [1, 2], q, offset=5))  # replaces partition 0
    assert f.assigned() == {(topic, 1), (topic, 2)}
    assert triples(drain(it, 10)) == triples(m for m in sent if m.partition > 0 and m.offset >= 5)
    f.add(infos_for(topic, [0], q, offset=8))
    assert triples(drain(it, 2)) == triples(m for m in sent if m.partition == 0 and m.offset >= 8)
    f.remove([(topic, 1), (topic, 2), ("no-such-topic", 0)])
    assert f.assigned() == {(topic, 0)}
    more = produce(topic, 30, partitions=3, start=30)
    assert triples(drain(it, 10)) == triples(m for m in more if m.partition == 0)
    assert_nothing_more(it)
    f.add(infos_for(topic, [0], q, offset=12))  # re-adding an assigned partition restarts it
    assert [m.offset for m in drain(it, 8)] == list(range(12, 20))
    f.stop_fetching()
    assert f.assigned() == set() and f.lag() == {}
    produce(topic, 3, partitions=3, start=60)
    assert_nothing_more(it)
    with pytest.raises(ValueError):
        f.assign(infos_for(topic, [0, 0], q))


def test_a_new_topic_incarnation_gets_a_new_consumer(make_fetcher, topic_factory, produce) -> None:
    # librdkafka may take a re-created topic's metadata for stale (see ConsumerHandle.renew_for): a
    # partition of another incarnation (epoch) than the Consumer fetched is fetched by a new one,
    # and the partitions already assigned go on from their first message not queued.
    topic, other = topic_factory(partitions=2), topic_factory(partitions=1)
    sent = produce(topic, 40, partitions=2)
    kept = produce(other, 20, partitions=1)
    q, q_other = StreamQueue(2, "s"), StreamQueue(2, "o")
    it, it_other = ConsumerIterator(q, 200), ConsumerIterator(q_other, 200)
    f = make_fetcher()
    f.assign(infos_for(topic, [0, 1], q, epoch=7) + infos_for(other, [0], q_other, epoch=3))
    assert triples(drain(it, 40)) == triples(sent)
    assert triples(drain(it_other, 10)) == triples(kept[:10])
    first = f._kafka.raw
    f.add(infos_for(topic, [1], q, offset=5, epoch=7))  # the same incarnation: the same Consumer
    assert f._kafka.raw is first
    assert [m.offset for m in drain(it, 15)] == list(range(5, 20))
    f.remove([(topic, 0), (topic, 1)])
    f.add(infos_for(topic, [0], q, offset=3, epoch=8))  # another incarnation
    assert f._kafka.raw is not first
    assert f.assigned() == {(topic, 0), (other, 0)}
    assert [m.offset for m in drain(it, 17)] == list(range(3, 20))
    rest = drain(it_other, 10)  # the other topic goes on where its queue stopped taking
    assert [m.offset for m in rest][-1] == 19 and not {m.offset for m in rest} - set(range(20))
    more = produce(other, 5, partitions=1, start=20)
    assert triples(drain(it_other, 5)) == triples(more)
    assert_nothing_more(it)


def test_remove_drops_held_chunks_and_unpauses(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 500, partitions=1)
    q = StreamQueue(1, "s")
    f = make_fetcher(batch_size=20, queued_max_message_chunks=1)
    f.assign(infos_for(topic, [0], q))
    deadline = time.monotonic() + 10
    while not f._router.paused and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f._router.paused == {(topic, 0)} and f._router.held
    f.remove([(topic, 0)])
    assert not f._router.paused and not f._router.held
    assert q.clear() == 1
    f.add(infos_for(topic, [0], q, offset=480))  # fetches again: the pause did not survive
    assert [m.offset for m in drain(ConsumerIterator(q, 200), 20)] == list(range(480, 500))


def test_held_values_beyond_the_byte_bound_pause_the_partition(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 50, partitions=1, value_size=1000)
    q = StreamQueue(1, "s")
    f = make_fetcher(batch_size=10_000, queued_max_message_chunks=1, fetch_message_max_bytes=20_000)
    f.assign(infos_for(topic, [0], q))
    deadline = time.monotonic() + 10
    while len(q) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    produce(topic, 300, partitions=1, start=50, value_size=1000)  # the queue is full: these are held
    while not f._router.paused and time.monotonic() < deadline:
        time.sleep(0.05)
    # Far below batch_size messages: the 1 x 20,000-byte legacy bound paused it.
    assert f._router.paused == {(topic, 0)} and 20 <= len(f._router.held[(topic, 0)]) <= 300
    assert f._router.held_bytes[(topic, 0)] >= 20_000
    got = drain(ConsumerIterator(q, 200), 350)
    assert [m.offset for m in got] == list(range(350))
    assert not f._router.paused and not f._router.held and not f._router.held_bytes


def test_stale_and_inactive_partitions_are_not_delivered(make_fetcher, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 100, partitions=1)
    q = StreamQueue(1, "s")
    f = make_fetcher(batch_size=10, queued_max_message_chunks=1)
    info = infos_for(topic, [0], q)[0]
    f.assign([info])
    deadline = time.monotonic() + 10
    while not f._router.held and time.monotonic() < deadline:
        time.sleep(0.05)
    info.active = False  # released by a rebalance: held chunks are dropped on the next retry
    q.clear()
    deadline = time.monotonic() + 10
    while f._router.held and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not f._router.held and len(q) == 0


def test_consumer_calls_from_other_threads_do_not_starve(make_fetcher, topic_factory, produce) -> None:
    """confluent-kafka serializes calls on one Consumer and consume() holds that gate while it waits:
    a direct commit() from another thread starves. The proxy runs it on the fetcher thread."""
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)
    q = StreamQueue(2, "s")
    f = make_fetcher()
    f.assign(infos_for(topic, [0, 1], q))
    drain(ConsumerIterator(q, 200), 20)  # now the fetcher loops in consume() on idle partitions
    results: list[object] = []

    def committer() -> None:
        began = time.monotonic()
        f.consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        results.append(f.consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
        results.append(time.monotonic() - began)

    t = threading.Thread(target=committer)
    t.start()
    t.join(20)
    assert results and results[0] == 7 and results[1] < 5, results
    assert f.consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (0, 10)
    assert isinstance(f.consumer.memberid(), (str, type(None)))


def test_consumer_config_forces_what_the_fetcher_relies_on() -> None:
    settings = FetchSettings(
        "b:9092",
        "g",
        "",
        fetch_message_max_bytes=200 * 1024 * 1024,
        fetch_wait_max_ms=0,
        socket_timeout_ms=0,
        socket_receive_buffer_bytes=-1,
        overrides={"auto.offset.reset": "earliest", "fetch.queue.backoff.ms": "50"},
    )
    conf = settings.consumer_config()
    assert conf["auto.offset.reset"] == "error" and conf["enable.auto.commit"] is False
    assert conf["enable.auto.offset.store"] is False and conf["enable.partition.eof"] is False
    assert conf["fetch.queue.backoff.ms"] == "50" and "client.id" not in conf
    assert conf["max.partition.fetch.bytes"] == 200 * 1024 * 1024 <= conf["fetch.max.bytes"]  # type: ignore[operator]
    assert conf["socket.timeout.ms"] == 300000 and conf["socket.receive.buffer.bytes"] == 0
    confluent_kafka.Consumer(conf).close()  # librdkafka accepts the whole mapping
    with pytest.raises(ValueError):
        FetchSettings("b:9092", "g", "c", auto_offset_reset="earliest")


def test_a_late_out_of_range_error_of_an_earlier_assignment_leaves_the_position_alone(
    make_fetcher, topic_factory, produce, caplog
) -> None:
    # A 200-event chaos run: a topic re-created under a member. Its new record started at 0 and
    # delivered 0 and 1; then librdkafka reported the old incarnation's position (129) out of range,
    # and the reset sent the new record back to 0: 0 and 1 were delivered twice.
    topic = topic_factory(partitions=1)
    sent = produce(topic, 2, partitions=1)
    q = StreamQueue(2, "s")
    infos = infos_for(topic, [0], q)
    f = make_fetcher(auto_offset_reset="smallest")
    it = ConsumerIterator(q, 200)
    f.assign(infos)
    assert triples(drain(it, 2)) == triples(sent)
    with caplog.at_level(logging.INFO, logger="zkconsumer.consumer.fetcher"):
        f._call(
            lambda: f._resets.reset_out_of_range(f._kafka.raw, (topic, 0), 129)
        )  # what the fetcher does with that error
    assert (
        f"{topic}-0: out-of-range error for offset 129 ignored: fetching continues at 2, inside [0, 2]" in caplog.text
    )
    assert infos[0].fetched_offset == 2
    more = produce(topic, 3, partitions=1, start=2)
    assert triples(drain(it, 3)) == triples(more)  # fetching goes on from 2, nothing repeated
    assert_nothing_more(it)
