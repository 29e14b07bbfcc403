"""Partitions added to a subscribed topic: a partition the brokers do not know yet is fetched once they do."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaException

from harness.fetching import drain, infos_for, triples
from zkconsumer.consumer.chunks import StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.testing import kafka

pytestmark = pytest.mark.cluster


def test_a_partition_added_after_its_claim_is_fetched_from_its_start(make_fetcher, topic_factory, produce) -> None:
    """The controller writes the topic node (whose watch starts our rebalance) before the brokers
    create the new partitions, so the claim can reach the fetcher first: with no offset node, the
    partition's start is asked of brokers that do not know it. That failed the rebalance attempt
    (_UNKNOWN_PARTITION) and the new partitions waited out rebalance.backoff.ms, delivering nothing
    (the audit harness: 1.6 s and 17 s). Here the partition is added 1 s after the fetcher is given it."""
    topic = topic_factory(partitions=1)
    queue = StreamQueue(2, "s")
    f = make_fetcher(auto_offset_reset="largest")  # where a new partition starts: its log start either way
    grow = threading.Timer(1.0, kafka.add_partitions, args=(f.settings.bootstrap_servers, topic, 2))
    grow.start()
    try:
        f.add(infos_for(topic, [1], queue, offset=-1))  # -1: no offset node, auto.offset.reset applies
    finally:
        grow.join()
    sent = [m for m in produce(topic, 20, partitions=2) if m.partition == 1]
    assert triples(drain(ConsumerIterator(queue, 5000), len(sent))) == triples(sent)
    assert f.assigned() == {(topic, 1)}


def test_a_partition_the_brokers_never_create_fails_the_assignment_by_name(make_fetcher, topic_factory) -> None:
    """The wait is bounded (socket.timeout.ms, at least 1 s): a partition no broker knows (a topic
    node edited by hand, say) fails the command, naming it, with nothing assigned."""
    topic = topic_factory(partitions=1)
    f = make_fetcher(socket_timeout_ms=1000)
    with pytest.raises(KafkaException, match=f"{topic}-5: the brokers do not know this partition"):
        f.add(infos_for(topic, [5], StreamQueue(2, "s"), offset=-1))
    assert f.assigned() == set()
