"""The executors' consumer pool: one idle consumer per partition read, least recently used closed first."""

from __future__ import annotations

from zkconsumer.spark.consumer_pool import ConsumerPool, pool_key


class FakeConsumer:
    def __init__(self, name: str) -> None:
        self.name, self.closed = name, False

    def close(self) -> None:
        self.closed = True


def test_a_read_takes_back_the_consumer_of_its_partition_and_its_position() -> None:
    pool = ConsumerPool()
    key = pool_key({"bootstrap.servers": "b:9092", "fetch.wait.max.ms": 100}, "t", 0)
    assert pool.take(key) == (None, None)
    consumer = FakeConsumer("a")
    pool.give_back(key, consumer, 50)
    assert pool.take(key) == (consumer, 50) and len(pool) == 0  # taken: no one else reads with it meanwhile
    assert pool.take(pool_key({"bootstrap.servers": "b:9092", "fetch.wait.max.ms": 100}, "t", 1)) == (None, None)


def test_other_settings_or_brokers_never_share_a_consumer() -> None:
    pool = ConsumerPool()
    pool.give_back(pool_key({"bootstrap.servers": "b:9092"}, "t", 0), FakeConsumer("a"), 5)
    assert pool.take(pool_key({"bootstrap.servers": "c:9092"}, "t", 0)) == (None, None)
    assert pool.take(pool_key({"bootstrap.servers": "b:9092", "isolation.level": "read_uncommitted"}, "t", 0)) == (
        None,
        None,
    )
    # the logger object is no setting: two reads' loggers differ by identity only
    assert pool.take(pool_key({"bootstrap.servers": "b:9092", "logger": object()}, "t", 0))[1] == 5


def test_at_most_limit_wait_and_the_least_recently_used_is_closed() -> None:
    pool = ConsumerPool(limit=2)
    consumers = [FakeConsumer(str(i)) for i in range(3)]
    for i, consumer in enumerate(consumers):
        pool.give_back(pool_key({}, "t", i), consumer, i)
    assert [c.closed for c in consumers] == [True, False, False] and len(pool) == 2
    replaced = FakeConsumer("again")
    pool.give_back(pool_key({}, "t", 2), replaced, 9)  # a second idle one for the same key replaces it
    assert consumers[2].closed and pool.take(pool_key({}, "t", 2)) == (replaced, 9)
    pool.close_all()
    assert consumers[1].closed and len(pool) == 0
