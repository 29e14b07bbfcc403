"""Mixed Scala 1.1.1 + zkconsumer groups beyond static range: roundrobin (1.x order) and whitelists."""

from __future__ import annotations

import json

import pytest

from harness.members import expected_assignment, keys_of
from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.assignors import AssignmentInput, roundrobin_assign
from zkconsumer.coordinator.subscription import Whitelist, WildcardSubscription, encode_registration
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def assert_exactly_once(mixed, sent: set[tuple[str, int, int]]) -> None:  # type: ignore[no-untyped-def]
    mixed.wait_for(sent)
    counts = mixed.keys()
    assert set(counts) == sent
    assert not {k: n for k, n in counts.items() if n > 1}, "a message was delivered twice"


RR_MEMBERS = {
    "a-scala": {"big": 2, "small": 1},
    "c-scala": {"big": 1},  # unequal subscriptions
    "b-py": {"big": 1, "small": 2},
    "d-py": {"small": 1},
}  # (legal from 0.10.2)


def topic_names_where_formats_differ(group: str, stem: str) -> tuple[str, str]:
    """Topic names for which the 1.x "t-p" and pre-1.0 "[t,p]" hash orders deal differently.

    Most names do, but not all: picking them makes the test prove the 1.x order every time.
    """
    for i in range(1000):
        names = {"big": f"{stem}-rr{i}-big", "small": f"{stem}-rr{i}-small"}
        threads: dict[str, list[str]] = {}
        for member, subscription in RR_MEMBERS.items():
            for role, streams in subscription.items():
                threads.setdefault(names[role], []).extend(f"{group}_{member}-{n}" for n in range(streams))
        inp = AssignmentInput(threads, {names["big"]: list(range(12)), names["small"]: list(range(5))})
        if roundrobin_assign(inp, key_format="t-p") != roundrobin_assign(inp, key_format="[t,p]"):
            return names["big"], names["small"]
    raise AssertionError("no topic names found whose roundrobin orders differ")


def test_mixed_roundrobin_group_uses_the_1x_order(mixed, zk, topic_factory, produce) -> None:
    big, small = topic_names_where_formats_differ(mixed.group, mixed.group.replace("g-", "t-", 1))
    topic_factory(partitions=12, name=big)
    topic_factory(partitions=5, name=small)
    names = {"big": big, "small": small}
    for member, subscription in RR_MEMBERS.items():
        topics = {names[role]: streams for role, streams in subscription.items()}
        add = mixed.add_scala if member.endswith("scala") else mixed.add_py
        add(member, topics, strategy="roundrobin")
    mixed.wait_ready()
    owners = mixed.balanced([big, small], strategy="roundrobin")  # == our roundrobin, compat 1.1
    assert len(owners) == 17
    assert owners != expected_assignment(zk, mixed.group, "roundrobin", Compat.parse("0.11"))
    for (topic, _), thread in owners.items():  # nobody got a topic it did not subscribe to
        member = thread.rsplit("-", 1)[0].removeprefix(f"{mixed.group}_")
        assert topic in {names[role] for role in RR_MEMBERS[member]}

    sent = produce(big, 240, partitions=12) + produce(small, 100, partitions=5)
    assert_exactly_once(mixed, keys_of(sent))


def test_mixed_whitelist_group_follows_new_topics_and_writes_scala_bytes(mixed, zk, topic_factory, produce) -> None:
    # No '\' or '/' in the regex: Scala 1.0.1+ would store those double-escaped (README).
    prefix = mixed.group.replace("-", "")[-40:]
    regex = f"{prefix}-.*"
    first = topic_factory(partitions=4, name=f"{prefix}-one")
    other = topic_factory(partitions=2, name=f"{prefix}.other")  # '.' is not '-': never matched
    scala = mixed.add_scala("a-scala", whitelist=regex, streams=2)
    conn = mixed.add_py("b-py", whitelist=regex, streams=1)
    mixed.wait_ready()
    mixed.balanced([first])

    # Registration bytes: Scala's equal ours for the same subscription and timestamp.
    scala_bytes, _ = zk.get(znodes.member_path(mixed.group, scala.consumer_id))
    stamp = int(json.loads(scala_bytes)["timestamp"])
    assert scala_bytes == encode_registration(WildcardSubscription(Whitelist(regex), 2), stamp)
    ours, _ = zk.get(znodes.member_path(mixed.group, conn.consumer_id))
    ours_stamp = json.loads(ours)["timestamp"]
    assert (
        ours
        == (
            f'{{"version":1,"subscription":{{"{regex}":1}},"pattern":"white_list","timestamp":"{ours_stamp}"}}'
        ).encode()
    )
    assert scala_bytes == ours.replace(b":1}", b":2}").replace(ours_stamp.encode(), str(stamp).encode())

    sent = produce(first, 80, partitions=4)
    produce(other, 10, partitions=2)
    assert_exactly_once(mixed, keys_of(sent))

    # A matching topic created later: both members' topic watchers pick it up.
    second = topic_factory(partitions=3, name=f"{prefix}-two")
    owners = mixed.balanced([first, second])
    assert {t for t, _ in owners} == {first, second}
    assert owners.keys() >= {(second, p) for p in range(3)}
    sent += produce(second, 60, partitions=3) + produce(first, 40, partitions=4, start=80)
    assert_exactly_once(mixed, keys_of(sent))
    assert not [k for k in mixed.keys() if k[0] == other]


def test_backslash_whitelist_scala_double_escapes_and_the_group_still_agrees(mixed, zk, topic_factory, produce) -> None:
    """README 'Deliberate differences': Scala 1.1.1 stores '\\' and '/' escaped twice, we once.

    Scala then reads its own regex back with doubled backslashes, so its member matches no
    topic, while every reader (Scala's too) decodes our single-escaped key to the real regex.
    Both sides compute the same assignment: ours takes every partition, nothing collides.
    """
    prefix = mixed.group.replace("-", "")[-40:]
    regex = prefix + r"\.x|a/b"
    topic = topic_factory(partitions=4, name=f"{prefix}.x")
    scala = mixed.add_scala("a-scala", whitelist=regex, streams=1)
    conn = mixed.add_py("b-py", whitelist=regex, streams=1)
    mixed.wait_ready()
    owners = mixed.balanced([topic])
    assert set(owners.values()) == {f"{conn.consumer_id}-0"}

    scala_bytes, _ = zk.get(znodes.member_path(mixed.group, scala.consumer_id))
    stamp = json.loads(scala_bytes)["timestamp"]
    # Exact bytes: CoreUtils.JSONEscapeString ('\' -> '\\', '/' -> '\/'), then Jackson doubles
    # every backslash again. Ours stops after the first step.
    assert (
        scala_bytes
        == (
            f'{{"version":1,"subscription":{{"{prefix}\\\\\\\\.x|a\\\\/b":1}},'
            f'"pattern":"white_list","timestamp":"{stamp}"}}'
        ).encode()
    )
    ours = encode_registration(WildcardSubscription(Whitelist(regex), 1), int(stamp))
    assert (
        ours
        == (
            f'{{"version":1,"subscription":{{"{prefix}\\\\.x|a\\/b":1}},"pattern":"white_list","timestamp":"{stamp}"}}'
        ).encode()
    )

    sent = produce(topic, 40, partitions=4)
    assert_exactly_once(mixed, keys_of(sent))
    assert scala.deliveries() == []
