"""The live switch's member side (coordinator/switch_follow): the target by step, and a release only once Kafka equals ZooKeeper."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.coordinator.switch_follow import SwitchFollower, switch_target
from zkconsumer.errors import CommitFailed
from zkconsumer.migration import SWITCH_STEPS, encode_switch_node

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
        SimpleNamespace(consumer_id="g_a"),
        lambda field: b"",
        lambda topics, on_change, holding: seat,
        lambda why: None,
        set,
    )  # type: ignore[arg-type]
    follower.step, follower.seat = "handover", seat
    pending = {("t", 0): 7, ("t", 1): 9, ("t", 2): -1}  # ZooKeeper's offsets; -1: none to carry
    seat.refuse = True
    assert follower.releasable(pending, follower.carry(pending, 1.0)) == {("t", 2)}  # refused: the nodes stay
    seat.refuse, seat.lag = False, {("t", 1)}
    carried = follower.carry(pending, 1.0)
    assert follower.releasable(pending, carried) == {("t", 0), ("t", 2)}  # read back not equal: stays
    # ZooKeeper's offset moved since the carry (a commit meanwhile): the node stays until carried again
    assert follower.releasable({**pending, ("t", 0): 8}, carried) == {("t", 2)}
    seat.lag = set()
    assert follower.releasable(pending, follower.carry(pending, 1.0)) == set(pending)
    assert seat.kafka == {("t", 0): 7, ("t", 1): 9}
    follower.step = "zookeeper"  # no switch: nothing is carried, every node may go
    assert follower.carry({("t", 3): 4}, 1.0) == {} and ("t", 3) not in seat.kafka
    assert follower.releasable({("t", 3): 4}, {}) == {("t", 3)}


class _TopicSeat(_Seat):
    """A seat that records the topic lists it was asked to follow."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__()
        self.topics = topics
        self.followed: list[list[str]] = []

    def follow_topics(self, topics: list[str], timeout: float) -> None:
        self.followed.append(topics)
        self.topics = topics


def test_a_wildcards_new_topic_is_followed_by_the_seat_so_the_brokers_can_assign_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Before, the seat kept the topics it was made with: from `handover` a topic created since was
    assigned by the brokers to nobody, so delivered by nobody (tests/chaos/test_live_switch_faults.py)."""
    node = SimpleNamespace(data=encode_switch_node("handover", "host", 0), path="/consumers/g/zkconsumer/switch")
    monkeypatch.setattr("zkconsumer.coordinator.switch_follow.read_switch_node_watched", lambda *a: node)
    made: list[_TopicSeat] = []

    def make_seat(topics: list[str], on_change: object, holding: object) -> _TopicSeat:
        made.append(_TopicSeat(topics))
        return made[-1]

    group = SimpleNamespace(consumer_id="g_a", client=None, group_id="g")
    follower = SwitchFollower(group, lambda field: b"", make_seat, lambda why: None, set)  # type: ignore[arg-type]
    assert follower.read_step({"t-a"}) == "handover" and made[0].topics == ["t-a"]
    follower.read_step({"t-a"})
    assert made[0].followed == []  # unchanged: nothing asked
    follower.read_step({"t-b", "t-a"})
    assert len(made) == 1 and made[0].followed == [["t-a", "t-b"]]
    follower.read_step({"t-b"})  # a topic deleted: the seat drops it too
    assert made[0].followed[-1] == ["t-b"]


class _Calls:
    """What librdkafka's Consumer is to the seat's rebalance callbacks: the calls they make, recorded."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *args: self.calls.append(name)


def test_a_seat_whose_membership_the_brokers_ended_moves_nothing_until_they_assign_again() -> None:
    """Before, a lost membership read as "the brokers assign us nothing": from `handover` the member
    released (stopped delivering) every partition it held, while its commits as a member were refused."""
    from confluent_kafka import TopicPartition as KafkaTP

    from zkconsumer.broker_coordination.shadow import ShadowGroupMember

    seat = ShadowGroupMember("g_a", ["t"], {}, on_change=lambda why: None, on_failure=lambda exc: None, holding=set)
    seat._on_assign(_Calls(), [KafkaTP("t", 0), KafkaTP("t", 1)])
    assert seat.assigned() == {("t", 0), ("t", 1)}
    seat._on_lost(_Calls(), [KafkaTP("t", 0), KafkaTP("t", 1)])
    assert seat.assigned() is None
    owned = {("t", 0): "g_a-0", ("t", 1): "g_a-1"}
    assert switch_target("handover", {}, seat.assigned(), THREADS, owned) == owned
    seat._on_assign(_Calls(), [KafkaTP("t", 1)])
    assert seat.assigned() == {("t", 1)}


def test_a_revocation_waits_only_for_what_the_member_holds_while_it_follows_the_brokers() -> None:
    held = {("t", 0)}
    follower = SwitchFollower(
        SimpleNamespace(consumer_id="g_a"),
        lambda field: b"",
        lambda topics, on_change, holding: _Seat(),
        lambda why: None,
        lambda: set(held),
    )  # type: ignore[arg-type]
    for step in SWITCH_STEPS:
        follower.step = step
        assert follower.holding() == (held if step in ("handover", "broker") else set())
