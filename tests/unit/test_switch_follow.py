"""The live switch's member side (coordinator/switch_follow): the target by step, and a release only once Kafka equals ZooKeeper."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.coordinator.switch_follow import SwitchFollower, switch_target
from zkconsumer.errors import CommitFailed
from zkconsumer.migration import SWITCH_STEPS

Key = tuple[str, int]
Share = dict[Key, str]
KEYS = [(t, p) for t in ("t", "u") for p in range(4)]
THREADS = {"t": ["g_a-0", "g_a-1"], "u": ["g_a-0"]}
keys = st.frozensets(st.sampled_from(KEYS))
shares = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["g_a-0", "g_a-1"]))


@given(st.sampled_from(SWITCH_STEPS), shares, st.none() | keys, shares)
def test_the_target_is_zookeepers_share_until_handover_then_exactly_what_the_brokers_assign(
    step: str, zookeeper: Share, brokers: frozenset[Key] | None, owned: Share
) -> None:
    target = switch_target(step, zookeeper, brokers, THREADS, owned)
    if step in ("zookeeper", "joining"):
        assert target == zookeeper
    elif brokers is None:
        assert target == owned  # no word from the brokers yet: nothing moves
    else:
        assert set(target) == set(brokers)
        for key, thread in target.items():
            assert thread in THREADS[key[0]]
            if key in owned and owned[key] in THREADS[key[0]]:
                assert thread == owned[key]  # a partition we keep stays on its stream


def test_a_topic_we_do_not_subscribe_to_is_not_claimed_even_if_the_brokers_assign_it() -> None:
    assert switch_target("handover", {}, frozenset({("v", 0), ("t", 1)}), THREADS, {}) == {("t", 1): "g_a-0"}


class _Seat:
    """The brokers' side of a seat as the release sees it: Kafka's committed offsets, refusing while told to."""

    member_id = "m-1"

    def __init__(self) -> None:
        self.kafka: dict[Key, int] = {}
        self.refuse = False
        self.lag: set[Key] = set()  # partitions whose commit Kafka takes but reads back old (a moved coordinator)

    def start(self) -> None:
        pass

    def assigned(self) -> frozenset[Key] | None:
        return frozenset()

    def commit(self, offsets: Mapping[Key, int], timeout: float) -> dict[Key, int]:
        if self.refuse:
            raise CommitFailed("REBALANCE_IN_PROGRESS", sorted(offsets))
        self.kafka.update({k: o for k, o in offsets.items() if k not in self.lag})
        return {k: self.kafka.get(k, -1) for k in offsets}

    def leave(self) -> None:
        pass

    def wait_left(self, timeout: float) -> bool:
        return True


def test_an_owner_node_goes_only_once_kafka_reads_back_zookeepers_offset_and_a_refusal_keeps_it() -> None:
    seat = _Seat()
    follower = SwitchFollower(
        SimpleNamespace(consumer_id="g_a"), lambda field: b"", lambda topics, on_change: seat, lambda why: None
    )  # type: ignore[arg-type]
    follower.step, follower.seat = "handover", seat
    pending = {("t", 0): 7, ("t", 1): 9, ("t", 2): -1}  # ZooKeeper's offsets; -1: none to carry
    seat.refuse = True
    assert follower.releasable(pending, 1.0) == {("t", 2)}  # refused: the nodes with offsets stay
    seat.refuse, seat.lag = False, {("t", 1)}
    assert follower.releasable(pending, 1.0) == {("t", 0), ("t", 2)}  # read back not equal: stays
    seat.lag = set()
    assert follower.releasable(pending, 1.0) == set(pending)
    assert seat.kafka == {("t", 0): 7, ("t", 1): 9}
    follower.step = "zookeeper"  # no switch: nothing is carried, every node may go
    assert follower.releasable({("t", 3): 4}, 1.0) == {("t", 3)} and ("t", 3) not in seat.kafka
