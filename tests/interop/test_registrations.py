"""The exact registration bytes a real Scala 1.1.1 member writes vs what zkconsumer writes (static)."""

from __future__ import annotations

import json

import pytest

from harness.scala import ScalaMember
from zkconsumer.coordinator.subscription import (
    Blacklist,
    StaticSubscription,
    Whitelist,
    WildcardSubscription,
    _scala_trie_position,
    encode_registration,
)
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def registration(zk, group: str, consumer_id: str) -> tuple[bytes, int]:  # type: ignore[no-untyped-def]
    data, stat = zk.get(znodes.member_path(group, consumer_id))
    assert stat.ephemeralOwner != 0
    return data, int(json.loads(data)["timestamp"])


def test_static_registration_is_byte_identical_up_to_four_topics(mixed, zk) -> None:
    # Topics need not exist: both write the subscription as given, in the caller's order.
    stem = mixed.group.replace("g-", "t-", 1)
    topics = {f"{stem}-z": 2, f"{stem}-a": 1, f"{stem}-m": 3, f"{stem}-b": 1}
    scala = mixed.add_scala("a-scala", topics)
    conn = mixed.add_py("b-py", topics)
    mixed.wait_ready()
    scala_bytes, stamp = registration(zk, mixed.group, scala.consumer_id)
    assert scala_bytes == encode_registration(StaticSubscription.of(topics), stamp)
    ours, ours_stamp = registration(zk, mixed.group, conn.consumer_id)
    assert ours.replace(str(ours_stamp).encode(), str(stamp).encode()) == scala_bytes
    counts = ",".join(f'"{t}":{n}' for t, n in topics.items())
    assert (
        scala_bytes
        == (f'{{"version":1,"subscription":{{{counts}}},"pattern":"static","timestamp":"{stamp}"}}').encode()
    )


def scala_immutable_map_order(keys: list[str]) -> list[str]:
    """Iteration order of Scala 2.12's immutable Map built from `keys`: insertion up to 4, else trie order."""
    return keys if len(keys) <= 4 else sorted(keys, key=_scala_trie_position)


def test_static_registration_above_four_topics_is_in_scala_hash_map_order(mixed, zk) -> None:
    # Scala's Java API builds `Map.empty ++ topicCountMap.asScala`; above 4 entries that is a
    # HashTrieMap, so the JSON keys follow the improved String hash, not the caller's order.
    stem = mixed.group.replace("g-", "t-", 1)
    topics = {f"{stem}-{c}": n for n, c in enumerate("abcdefg", start=1)}
    scala = mixed.add_scala("a-scala", topics)
    mixed.wait_ready()
    scala_bytes, stamp = registration(zk, mixed.group, scala.consumer_id)
    keys = list(json.loads(scala_bytes)["subscription"])
    assert keys == scala_immutable_map_order(list(topics))
    assert keys != list(topics)
    counts = ",".join(f'"{t}":{topics[t]}' for t in keys)
    assert (
        scala_bytes
        == (f'{{"version":1,"subscription":{{{counts}}},"pattern":"static","timestamp":"{stamp}"}}').encode()
    )


def test_our_static_registration_above_four_topics_matches_scala_order() -> None:
    topics = {f"orders-{c}": n for n, c in enumerate("abcdefg", start=1)}
    ours = json.loads(encode_registration(StaticSubscription.of(topics), 1_500_000_000_000))
    assert list(ours["subscription"]) == scala_immutable_map_order(list(topics))


@pytest.mark.parametrize("kind", ["whitelist", "blacklist"])
def test_wildcard_registration_normalises_like_scala(mixed, zk, kind: str) -> None:
    # TopicFilter trims, turns ',' into '|', drops spaces and strips outer quotes before storing.
    # No '\' or '/': those are stored double-escaped by Scala 1.0.1+ (test_mixed_subscriptions).
    stem = mixed.group.replace("-", "")[-30:]
    raw = f""" '"{stem}-a, {stem}-b.*"' """
    scala = ScalaMember(
        mixed.cluster.zookeeper_connect, mixed.group, "a-scala", workdir=mixed.workdir, **{kind: raw}
    ).start()  # type: ignore[arg-type]
    mixed.scala["a-scala"] = scala
    mixed.wait_ready()
    scala_bytes, stamp = registration(zk, mixed.group, scala.consumer_id)
    pattern = "white_list" if kind == "whitelist" else "black_list"
    assert (
        scala_bytes
        == (
            f'{{"version":1,"subscription":{{"{stem}-a|{stem}-b.*":1}},"pattern":"{pattern}","timestamp":"{stamp}"}}'
        ).encode()
    )
    topic_filter = Whitelist(raw) if kind == "whitelist" else Blacklist(raw)
    assert scala_bytes == encode_registration(WildcardSubscription(topic_filter, 1), stamp)
