"""Real Scala members of every ZooKeeper-era release, 0.8.2.2 through 1.0.2, in groups with zkconsumer members.

1.1.1 has its own files (test_mixed_group.py and the rest); here each older release runs the
shortest story that proves a shared group: range and roundrobin agree on who owns what, each
message is delivered once, and offsets committed by one kind are picked up by the other when a
member leaves. The zkconsumer members set `zkconsumer.compat.version` to the release, as
docs/differences.md tells a user to. The brokers are the default cluster's (3.9.1): every one of
these clients' fetch and metadata request versions is still served there (Kafka 4.0 removed them).
"""

from __future__ import annotations

import time

import pytest

from harness.members import committed_offsets, kafka_offsets, keys_of, owner_table
from harness.scala import (
    COMPAT_VERSION,
    DEFAULT_RELEASE,
    check_consumer_offsets,
    describe_group,
    verify_consumer_rebalance,
)
from zkconsumer.config.compat import DEFAULT, Compat
from zkconsumer.coordinator.assignors import assign
from zkconsumer.coordinator.rebalance_plan import assignment_input
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

PARTITIONS = 8
# Each release's client, and the compat value a zkconsumer member beside it sets (1.1.1: the other files).
RELEASES = {release: compat for release, compat in COMPAT_VERSION.items() if release != DEFAULT_RELEASE}


# VerifyConsumerRebalance of 0.8.2.2 and 0.9.0.1 reports "failed" for every group, a group of
# their own Scala members included: it compares owner nodes (thread ids) with consumer ids. Those
# two are left out; the tool was fixed in 0.10.
VERIFY_WORKS = ("0.10.2.2", "1.0.2")
OFFSET_CHECKER = ("0.8.2.2", "0.9.0.1", "0.10.2.2")  # removed in 1.0
GROUP_COMMAND = ("0.9.0.1", "0.10.2.2", "1.0.2")  # added in 0.9


def offset_checker_rows(stdout: str) -> dict[int, tuple[int, int, int, str]]:
    """ConsumerOffsetChecker: 'Group Topic Pid Offset logSize Lag Owner' -> partition: (offset, log end, lag, owner)."""
    rows = [line.split() for line in stdout.splitlines() if line.strip()]
    return {int(r[2]): (int(r[3]), int(r[4]), int(r[5]), r[6]) for r in rows[1:] if len(r) == 7 and r[2].isdigit()}


def group_command_rows(stdout: str) -> dict[int, tuple[int, int, int, str]]:
    """ConsumerGroupCommand --describe, in 0.9's comma form or the columns of 0.10 and later."""
    out = {}
    for line in stdout.splitlines():
        cols = [c.strip() for c in line.split(",")] if "," in line else line.split()
        if cols and cols[0] not in ("GROUP", "TOPIC") and len(cols) >= 6:
            if "," in line:  # GROUP, TOPIC, PARTITION, CURRENT OFFSET, LOG END OFFSET, LAG, OWNER
                out[int(cols[2])] = (int(cols[3]), int(cols[4]), int(cols[5]), cols[6])
            else:  # TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID
                out[int(cols[1])] = (int(cols[2]), int(cols[3]), int(cols[4]), cols[5])
    return out


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_range_group_hands_partitions_both_ways_and_the_releases_tools_read_it(
    release: str, mixed, topic_factory, produce
) -> None:  # type: ignore[no-untyped-def]
    compat = Compat.parse(RELEASES[release])
    topic = topic_factory(partitions=PARTITIONS)
    props = {"zkconsumer_compat_version": RELEASES[release]}
    mixed.add_scala("a-scala", {topic: 2}, release=release, auto_commit_interval_ms=300)
    py = mixed.add_py("b-py", {topic: 2}, auto_commit_enable=False, **props)
    mixed.wait_ready()
    owners = mixed.balanced([topic], compat=compat)
    g = mixed.group
    # Threads in String order: a-scala-0, a-scala-1, b-py-0, b-py-1: two partitions each.
    layout = ["a-scala-0"] * 2 + ["a-scala-1"] * 2 + ["b-py-0"] * 2 + ["b-py-1"] * 2
    assert owners == {(topic, p): f"{g}_{thread}" for p, thread in enumerate(layout)}

    first = produce(topic, 400, partitions=PARTITIONS)  # 50 per partition
    mixed.wait_for(keys_of(first))
    assert {p for _, p, _ in mixed.deliveries("a-scala")} == {0, 1, 2, 3}
    py.commit_offsets()
    deadline = time.monotonic() + 30  # the Scala member's auto-commit
    while committed_offsets(mixed.zk, g, topic) != dict.fromkeys(range(PARTITIONS), 50):
        assert time.monotonic() < deadline, committed_offsets(mixed.zk, g, topic)
        time.sleep(0.2)
    check_tools(mixed, release, topic, owners, 50)
    assert owner_table(mixed.zk, g, [topic]) == owners  # the tools changed nothing

    # The Scala member leaves (its shutdown commits): ours takes everything from those offsets.
    mixed.leave("a-scala")
    assert mixed.balanced([topic], compat=compat) == {(topic, p): f"{g}_b-py-{p // 4}" for p in range(PARTITIONS)}
    second = produce(topic, 400, partitions=PARTITIONS)
    mixed.wait_for(keys_of(first) | keys_of(second))
    py.commit_offsets()  # no auto-commit: what the next owner starts from is this

    # A new Scala member joins and ours leaves: the Scala member picks up what ours committed.
    mixed.add_scala("c-scala", {topic: 1}, release=release)
    mixed.wait_ready()
    mixed.balanced([topic], compat=compat)
    mixed.leave("b-py")
    assert mixed.balanced([topic], compat=compat) == {(topic, p): f"{g}_c-scala-0" for p in range(PARTITIONS)}
    third = produce(topic, 400, partitions=PARTITIONS)
    everything = keys_of(first) | keys_of(second) | keys_of(third)
    mixed.wait_for(everything)
    counts = mixed.keys()
    assert set(counts) == everything
    assert not {k: n for k, n in counts.items() if n > 1}, f"delivered twice beside {release}"


def names_that_tell_the_orders_apart(group: str, compat: Compat) -> tuple[str, str]:
    """Two topic names for which roundrobin as `compat` orders partitions gives another assignment
    than 1.1's: a member keeping the wrong order would then claim what the Scala member claims."""
    threads = {f"{group}_{name}": [f"{group}_{name}-{i}" for i in (0, 1)] for name in ("a-scala", "b-py")}
    for n in range(1000):
        big, small = f"{group}-rr{n}-big", f"{group}-rr{n}-small"
        per_member = {cid: {big: ids, small: ids} for cid, ids in threads.items()}
        inp = assignment_input(per_member, {big: list(range(PARTITIONS)), small: [0, 1, 2]})
        if assign("roundrobin", inp, compat) != assign("roundrobin", inp, DEFAULT):
            return big, small
    raise AssertionError(f"no topic names tell {compat}'s roundrobin order from 1.1's")


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_roundrobin_group_agrees_with_each_release_on_the_order(release: str, mixed, topic_factory, produce) -> None:  # type: ignore[no-untyped-def]
    compat = Compat.parse(RELEASES[release])
    # 0.8.2 through 0.10.1 need every member to subscribe the same topics with the same stream
    # counts (KAFKA-2434): both kinds subscribe two topics, two streams each. Before 1.0 a
    # partition's sort key is "[t,p]" (KAFKA-5822): the names make that order differ from 1.1's.
    big, small = names_that_tell_the_orders_apart(mixed.group, compat) if compat.version < (1, 0, 0) else ("", "")
    big = topic_factory(partitions=PARTITIONS, name=big or None)
    small = topic_factory(partitions=3, name=small or None)
    topics = {big: 2, small: 2}
    mixed.add_scala("a-scala", topics, strategy="roundrobin", release=release)
    mixed.add_py("b-py", topics, strategy="roundrobin", zkconsumer_compat_version=RELEASES[release])
    mixed.wait_ready()
    owners = mixed.balanced([big, small], strategy="roundrobin", compat=compat)
    assert set(owners.values()) == {f"{mixed.group}_{n}-{i}" for n in ("a-scala", "b-py") for i in (0, 1)}
    sent = produce(big, 200, partitions=PARTITIONS) + produce(small, 60, partitions=3)
    mixed.wait_for(keys_of(sent))
    counts = mixed.keys()
    assert set(counts) == keys_of(sent)
    assert not {k: n for k, n in counts.items() if n > 1}, f"delivered twice beside {release}"
    assert owner_table(mixed.zk, mixed.group, [big, small]) == owners  # nothing moved while consuming


def check_tools(mixed, release: str, topic: str, owners: dict[tuple[str, int], str], offset: int) -> None:  # type: ignore[no-untyped-def]
    """The release's own tools read the group (both kinds of member) as it stands: every partition
    committed at `offset`, nothing left to read, owned as `owners` says."""
    g, zk_connect = mixed.group, mixed.cluster.zookeeper_connect
    want = {p: (offset, offset, 0, owners[(topic, p)]) for p in range(PARTITIONS)}
    if release in OFFSET_CHECKER:
        assert offset_checker_rows(check_consumer_offsets(zk_connect, g, release)) == want
    if release in GROUP_COMMAND:
        if release != "0.9.0.1":  # 0.10 and later print the consumer id: the owner minus "-<thread>"
            want = {p: (*row[:3], row[3].rsplit("-", 1)[0]) for p, row in want.items()}
        assert group_command_rows(describe_group(zk_connect, g, release)) == want
    if release in VERIFY_WORKS:
        assert "Rebalance operation successful !" in verify_consumer_rebalance(zk_connect, g, release)


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_whitelist_group_writes_the_releases_bytes_and_outlives_its_killed_scala_member(
    release: str, mixed, zk, topic_factory, produce
) -> None:  # type: ignore[no-untyped-def]
    """Before 1.0.1 Scala escapes a whitelist once, as zkconsumer does: the two registrations'
    subscriptions are the same bytes, both read the regex alike, and when the Scala member is
    killed (no commit) ours takes its partitions once its session expires, re-delivering at most
    what it never committed. From 1.0.1 Scala escapes it twice (Jackson on top of its own escaping,
    docs/differences.md) and its member matches no topic, as with 1.1.1: ours owns everything."""
    compat = Compat.parse(RELEASES[release])
    prefix = mixed.group.replace("-", "")[-40:]
    regex = prefix + r"\.[a-z]+|a/b"
    topics = [topic_factory(partitions=4, name=f"{prefix}.{name}") for name in ("one", "two")]
    other = topic_factory(partitions=2, name=f"{prefix}-other")  # no match: "\." is a dot
    scala = mixed.add_scala("a-scala", whitelist=regex, streams=1, release=release, auto_commit_interval_ms=300)
    py = mixed.add_py("b-py", whitelist=regex, streams=1, zkconsumer_compat_version=RELEASES[release])
    mixed.wait_ready()
    owners = mixed.balanced(topics, compat=compat)

    def subscription(consumer_id: str) -> bytes:
        data, _ = zk.get(znodes.member_path(mixed.group, consumer_id))
        return data.split(b'"subscription":', 1)[1].split(b',"pattern"', 1)[0]

    if compat.version >= (1, 0, 1):
        assert subscription(scala.consumer_id) == subscription(py.consumer_id).replace(b"\\", b"\\\\")
        assert set(owners.values()) == {f"{py.consumer_id}-0"}
    else:
        assert subscription(scala.consumer_id) == subscription(py.consumer_id)
        assert {o.rsplit("-", 1)[0] for o in owners.values()} == {scala.consumer_id, py.consumer_id}

    sent = [m for t in topics for m in produce(t, 80, partitions=4)] + produce(other, 10, partitions=2)
    mixed.wait_for({k for k in keys_of(sent) if k[0] != other})
    time.sleep(1.0)  # the Scala member's auto-commit (every 300 ms) covers what it delivered
    committed = {t: committed_offsets(zk, mixed.group, t) for t in topics}
    mixed.kill("a-scala")
    # FAST_PROPERTIES' 6 s session: after it expires, ours owns everything.
    ours = mixed.balanced(topics, compat=compat, timeout=60)
    assert set(ours.values()) == {f"{py.consumer_id}-0"}
    sent += [m for t in topics for m in produce(t, 40, partitions=4)]
    want = {k for k in keys_of(sent) if k[0] != other}
    mixed.wait_for(want)
    counts = mixed.keys()
    assert set(counts) == want  # nothing of the topic the regex does not match
    for (topic, partition, offset), n in counts.items():
        if n > 1:  # only what the killed member delivered past its last commit
            assert owners[(topic, partition)].startswith(scala.consumer_id), (topic, partition, offset)
            assert offset >= committed[topic].get(partition, 0), (topic, partition, offset, committed[topic])


@pytest.mark.parametrize("release", list(RELEASES))
def test_dual_commit_beside_each_release_keeps_both_stores_and_hands_over_without_a_repeat(
    release: str, mixed, zk, topic_factory, produce
) -> None:  # type: ignore[no-untyped-def]
    """offsets.storage=kafka with dual.commit.enabled on both kinds (a group migrating off
    ZooKeeper): each member's commits land in ZooKeeper and on the brokers, and the partitions
    of a Scala member that leaves continue from its commit."""
    dual = {"offsets_storage": "kafka", "dual_commit_enabled": "true"}
    compat = Compat.parse(RELEASES[release])
    topic = topic_factory(partitions=4)
    g, bootstrap = mixed.group, mixed.cluster.bootstrap_servers
    mixed.add_scala("a-scala", {topic: 1}, release=release, auto_commit_interval_ms=300, **dual)
    py = mixed.add_py("b-py", {topic: 1}, zkconsumer_compat_version=RELEASES[release], **dual)
    mixed.wait_ready()
    mixed.balanced([topic], compat=compat)
    first = produce(topic, 80, partitions=4)  # 20 per partition
    mixed.wait_for(keys_of(first))
    py.commit_offsets()
    everywhere = dict.fromkeys(range(4), 20)
    deadline = time.monotonic() + 30  # the Scala member's auto-commit
    while (committed_offsets(zk, g, topic), kafka_offsets(bootstrap, g, topic, 4)) != (everywhere, everywhere):
        assert time.monotonic() < deadline, (committed_offsets(zk, g, topic), kafka_offsets(bootstrap, g, topic, 4))
        time.sleep(0.3)

    mixed.leave("a-scala")
    assert set(mixed.balanced([topic], compat=compat).values()) == {f"{py.consumer_id}-0"}
    second = produce(topic, 80, partitions=4)
    want = keys_of(first) | keys_of(second)
    mixed.wait_for(want)
    counts = mixed.keys()
    assert set(counts) == want
    assert not {k: n for k, n in counts.items() if n > 1}, f"delivered twice beside {release}"
    py.commit_offsets()
    assert kafka_offsets(bootstrap, g, topic, 4) == dict.fromkeys(range(4), 40)
    assert committed_offsets(zk, g, topic) == dict.fromkeys(range(4), 40)
