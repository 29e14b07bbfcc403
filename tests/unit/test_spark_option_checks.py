"""Source options checked on the driver: the batch option pinning a read's partitions, refused offset storage."""

from __future__ import annotations

import pytest

from spark_jobs.options import OptionError, parse_options

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


def test_partitions_pins_a_batch_read() -> None:
    opts = parse_options({**BASE, "partitions": "t/0, t/3,my/topic/2"}, streaming=False)
    assert opts.partitions == {("t", 0), ("t", 3), ("my/topic", 2)}
    assert parse_options(BASE, streaming=False).partitions is None


@pytest.mark.parametrize(
    ("value", "streaming", "message"),
    [
        ("t/0", True, "applies to batch reads"),
        ("t", False, "is not topic/partition"),
        ("t/x", False, "is not topic/partition"),
        (" , ", False, "names no partition"),
    ],
)
def test_bad_partitions_name_the_option(value: str, streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options({**BASE, "partitions": value}, streaming=streaming)


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize("extra", [{}, {"dual.commit.enabled": "false"}])
def test_a_group_keeping_offsets_in_kafka_is_refused_by_batch_and_stream(streaming: bool, extra: dict) -> None:
    with pytest.raises(OptionError, match="offsets.storage=kafka"):
        parse_options({**BASE, "offsets.storage": "kafka", **extra}, streaming=streaming)
    assert parse_options({**BASE, "offsets.storage": "zookeeper"}, streaming=streaming).group_id == "g"
