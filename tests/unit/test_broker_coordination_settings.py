"""Pure parts of broker coordination: the Consumer's settings, and which stream each assigned partition feeds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.broker_coordination.settings import MIN_SESSION_TIMEOUT_MS, consumer_settings, managed_overrides, place
from zkconsumer.config.consumer_config import ConsumerConfig


def config(**props: object) -> ConsumerConfig:
    base: dict[str, object] = {"zookeeper.connect": "zk:2181", "group.id": "g", "zkconsumer.coordination": "broker"}
    return ConsumerConfig.from_mapping({**base, **props})


def test_the_group_settings_follow_the_legacy_properties() -> None:
    conf = consumer_settings(config(**{"auto.offset.reset": "smallest", "fetch.message.max.bytes": 2048}), "b:9092")
    assert conf["group.id"] == "g"
    assert conf["bootstrap.servers"] == "b:9092"
    assert conf["auto.offset.reset"] == "earliest"
    assert conf["max.partition.fetch.bytes"] == 2048
    assert conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert conf["enable.auto.commit"] is False and conf["enable.auto.offset.store"] is False
    assert conf["session.timeout.ms"] == MIN_SESSION_TIMEOUT_MS  # the legacy 6 s default is the brokers' least
    assert consumer_settings(config(**{"zookeeper.session.timeout.ms": 20000}), "b")["session.timeout.ms"] == 20000
    assert consumer_settings(config(), "b")["auto.offset.reset"] == "latest"


def test_librdkafka_overrides_apply_except_what_the_member_manages() -> None:
    cfg = config(
        **{"librdkafka.group.id": "other", "librdkafka.enable.auto.commit": "true", "librdkafka.linger.ms": "5"}
    )
    conf = consumer_settings(cfg, "b")
    assert conf["group.id"] == "g" and conf["enable.auto.commit"] is False
    assert conf["linger.ms"] == "5"
    assert managed_overrides(cfg) == ["enable.auto.commit", "group.id"]
    assert consumer_settings(config(**{"librdkafka.bootstrap.servers": "x:1"}), "b")["bootstrap.servers"] == "x:1"


def test_an_unknown_coordination_is_refused_naming_the_property() -> None:
    with pytest.raises(ValueError, match="zkconsumer.coordination"):
        config(**{"zkconsumer.coordination": "kraft"})


@given(
    st.lists(st.integers(0, 63), unique=True, max_size=40),
    st.dictionaries(st.integers(0, 7), st.integers(0, 5)),
    st.integers(1, 8),
)
def test_placement_evens_the_streams_out(partitions: list[int], load: dict[int, int], streams: int) -> None:
    load = {i: n for i, n in load.items() if i < streams}
    placed = place([("t", p) for p in partitions], load, streams)
    assert set(placed) == {("t", p) for p in partitions}
    assert all(0 <= i < streams for i in placed.values())
    counts = {i: load.get(i, 0) for i in range(streams)}
    for i in placed.values():
        counts[i] += 1
    # each new partition went to a least-loaded stream: no stream that got one ends above another by 2
    receivers = set(placed.values())
    if receivers:
        assert max(counts[i] for i in receivers) <= min(counts.values()) + 1
    assert place([("t", 1), ("t", 0)], {}, 2) == {("t", 0): 0, ("t", 1): 1}
