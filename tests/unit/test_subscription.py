"""Tests for zkconsumer.coordinator.subscription; expected values were checked against Kafka 1.1.1's own classes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.subscription import (
    MAX_STREAMS,
    Blacklist,
    StaticSubscription,
    TopicFilter,
    Whitelist,
    WildcardSubscription,
    encode_registration,
    from_registration,
    java_regex_to_python,
    make_consumer_id,
    normalise_regex,
    scala_map_head,
    thread_ids_for,
    thread_sort_key,
    to_registration,
)
from zkconsumer.zookeeper.znodes import Registration

TOPIC = st.from_regex(r"[A-Za-z0-9._-]{1,249}", fullmatch=True).filter(lambda t: t not in (".", ".."))
V0_10, V1_0_0, V1_1 = Compat.parse("0.10.2"), Compat.parse("1.0.0"), Compat.parse("1.1")
ALL = [
    "orders-1",
    "orders-22",
    "orders-x",
    "payments",
    "__consumer_offsets",
    "__transaction_state",
    "metrics.cpu",
    "metrics",
]


# ---------------------------------------------------------------- normalisation and matching


@pytest.mark.parametrize(
    ("raw", "regex"),
    [
        (" \"'metrics.*, a\\d+ /x\"' ", "metrics.*|a\\d+/x"),
        ("  'metrics.*, payments'  ", "metrics.*|payments"),
        ('"orders-.*"', "orders-.*"),
        ("\t'x\"y'\n", 'x"y'),
        ("a,b,,c", "a|b||c"),
        ("\x01 a b \x1f", "ab"),
        ("'\"'a'\"'", "a"),
        ("a'\u2028", "a\u2028"),
        ("a'\u2028'", "a'\u2028"),
        ("\xa0a\xa0", "\xa0a\xa0"),
    ],
)
def test_normalisation_like_topic_filter(raw: str, regex: str) -> None:
    assert normalise_regex(raw) == regex == Whitelist(raw).regex


def test_full_match_blacklist_and_internal_topics() -> None:
    assert [t for t in ALL if Whitelist("orders-\\d+").is_topic_allowed(t)] == ["orders-1", "orders-22"]
    assert [t for t in ALL if Whitelist("metrics").is_topic_allowed(t)] == ["metrics"]  # full match, not search
    assert [t for t in ALL if Blacklist('"orders-.*"').is_topic_allowed(t)] == ["payments", "metrics.cpu", "metrics"]
    assert [t for t in ALL if Blacklist("orders-.*").is_topic_allowed(t, exclude_internal=False)] == [
        "payments",
        "__consumer_offsets",
        "__transaction_state",
        "metrics.cpu",
        "metrics",
    ]
    everything = Whitelist(".*")
    assert not everything.is_topic_allowed("__transaction_state")
    assert everything.is_topic_allowed("__transaction_state", internal_topics=V0_10.internal_topics)
    assert not everything.is_topic_allowed("__consumer_offsets", internal_topics=V0_10.internal_topics)
    assert Whitelist("__.*").is_topic_allowed("__consumer_offsets", exclude_internal=False)


def test_filters_compare_by_kind_and_normalised_regex() -> None:
    assert Whitelist(" a, b ") == Whitelist("a|b") and hash(Whitelist(" a, b ")) == hash(Whitelist("a|b"))
    assert Whitelist("a") != Blacklist("a")
    assert (Whitelist("a").pattern, Blacklist("a").pattern) == ("white_list", "black_list")
    with pytest.raises(TypeError):
        TopicFilter("a")


def test_invalid_regex_names_the_regex() -> None:
    with pytest.raises(ValueError, match=re.escape("[ is an invalid regex")):
        Whitelist(" [ ")


@pytest.mark.parametrize(
    "regex",
    [
        "(?P<n>a)",
        "(?#c)",
        "a{,2}",
        "a{x}",
        "[a-c&&b]",
        "[[a]]",
        "[]a]",
        "a(?i)b",
        "(?x)a",
        "(?u)a",
        "\\p{javaLowerCase}",
        "\\G",
        "\\X",
        "\\k<n>",
        "\\N",
        "\\cA",
        "[\\b]",
        "[\\1]",
        "[\\Qa\\E]",
        "[\\Pl]",
        "\\",
        "[a",
        "(?(1)a)",
    ],
)
def test_java_and_python_disagreements_are_refused(regex: str) -> None:
    with pytest.raises(ValueError):
        Whitelist(regex)


@pytest.mark.parametrize(
    ("regex", "yes", "no"),
    [
        ("\\Qa.b\\E", "a.b", "axb"),
        ("\\p{Alpha}+\\P{Alpha}", "ab1", "abc"),
        ("[\\p{Lower}0-9]+", "a1", "A1"),
        ("(?<n>a)b", "ab", "b"),
        ("a\\z", "a", "ab"),
        ("\\0101", "A", "a"),
        ("(?i)ab", "AB", "ac"),
        ("a\\e?", "a", "b"),
        ("\\d+", "123", "\u0663"),
        ("(?i)k", "K", "\u212a"),
        ("a\\h?b", "ab", "a_b"),
        ("x{2}", "xx", "x"),
        ("a&b|~", "a&b", "ab"),
        ("[a&~|]+", "a&~|", "b"),
        ("a*+", "aa", "b"),
        ("(?>a|ab)c", "ac", "abc"),
    ],
)
def test_translated_java_regexes_match_like_java(regex: str, yes: str, no: str) -> None:
    compiled = re.compile(java_regex_to_python(regex), re.ASCII)
    assert compiled.fullmatch(yes) and not compiled.fullmatch(no)


# ---------------------------------------------------------------- subscriptions and thread ids


def test_static_subscription_of_validates() -> None:
    assert StaticSubscription.of({"orders": 2, "payments": 1}).topic_counts == (("orders", 2), ("payments", 1))
    for bad in ({}, {"a b": 1}, {"": 1}, {".": 1}, {"x" * 250: 1}, {"a": 0}, {"a": True}, {"a": 2**31}):
        with pytest.raises(ValueError):
            StaticSubscription.of(bad)


def test_static_thread_ids_ignore_the_topic_list() -> None:
    subscription = StaticSubscription.of({"orders": 2, "not-created-yet": 1})
    assert thread_ids_for("g_c", subscription, ["payments"]) == {
        "orders": ["g_c-0", "g_c-1"],
        "not-created-yet": ["g_c-0"],
    }


def test_wildcard_thread_ids_per_allowed_topic() -> None:
    subscription = WildcardSubscription(Whitelist("orders-.*, __.*"), 2)
    expected = {"orders-1": ["c-0", "c-1"], "orders-22": ["c-0", "c-1"], "orders-x": ["c-0", "c-1"]}
    assert thread_ids_for("c", subscription, ALL + ["orders-1"]) == expected
    assert thread_ids_for("c", subscription, ALL, compat=V0_10) == {**expected, "__transaction_state": ["c-0", "c-1"]}
    assert set(thread_ids_for("c", subscription, ALL, exclude_internal=False)) == set(expected) | {
        "__consumer_offsets",
        "__transaction_state",
    }
    assert thread_ids_for("c", subscription, []) == {}


def test_stream_counts_scala_would_assert_on_are_refused() -> None:
    zero = from_registration(Registration.decode(b'{"pattern":"static","subscription":{"a":0}}', "/p"))
    with pytest.raises(ValueError, match=">= 1|1.."):
        thread_ids_for("c", zero, [])
    huge = WildcardSubscription(Whitelist("a"), MAX_STREAMS + 1)
    assert thread_ids_for("c", huge, ["b"]) == {}  # no matching topic: Scala never builds the set either
    with pytest.raises(ValueError):
        thread_ids_for("c", huge, ["a"])


def test_thread_ids_sort_like_java_compare_to() -> None:
    ids = ["c-2", "c-10", "c-1", "c-0"]
    assert sorted(ids, key=thread_sort_key) == sorted(ids) == ["c-0", "c-1", "c-10", "c-2"]
    # Beyond the BMP Java compares UTF-16 code units: a surrogate (0xD83D) sorts before U+FFFF.
    assert sorted(["h\uffff-0", "h\U0001f600-0"], key=thread_sort_key) == ["h\U0001f600-0", "h\uffff-0"]


# ---------------------------------------------------------------- registrations

REFERENCE_STATIC = (
    b'{"version":1,"subscription":{"orders":2,"payments":1},"pattern":"static","timestamp":"1510000000000"}'
)


@pytest.mark.parametrize("compat", [Compat.parse(v) for v in ("0.8.2", "0.10.2", "1.0.0", "1.0.1", "1.1")])
def test_static_registration_bytes_in_every_release(compat: Compat) -> None:
    subscription = StaticSubscription.of({"orders": 2, "payments": 1})
    assert encode_registration(subscription, 1510000000000, compat) == REFERENCE_STATIC


@pytest.mark.parametrize(
    ("raw", "v1_1", "v1_0_0"),
    [  # v1_1: produced by Kafka 1.1.1's own classes
        ("orders-\\d+", rb'"orders-\\\\d+":2', rb'"orders-\\d+":2'),
        ("a/b", rb'"a\\/b":2', rb'"a\/b":2'),
        ("\t'x\"y'\n", rb'"x\\\"y":2', rb'"x\"y":2'),
        (" 'metrics.*, payments' ", b'"metrics.*|payments":2', b'"metrics.*|payments":2'),
    ],
)
def test_wildcard_registration_bytes(raw: str, v1_1: bytes, v1_0_0: bytes) -> None:
    subscription = WildcardSubscription(Whitelist(raw), 2)
    head, tail = b'{"version":1,"subscription":{', b'},"pattern":"white_list","timestamp":"1510000000000"}'
    # What Scala 1.0.1+ writes (Jackson over JSONEscapeString): modelled exactly ...
    assert to_registration(subscription, 1510000000000, V1_1).encode(jackson=True) == head + v1_1 + tail
    # ... but we always write the 0.8.2-1.0.0 form, which every release reads back as the regex itself.
    for compat in (V1_1, V1_0_0):
        assert encode_registration(subscription, 1510000000000, compat) == head + v1_0_0 + tail
    blacklist = encode_registration(WildcardSubscription(Blacklist(raw), 2), 1510000000000)
    assert blacklist == head + v1_0_0 + tail.replace(b"white_list", b"black_list")
    ours = Registration.decode(head + v1_0_0 + tail, "/x")
    assert from_registration(ours).topic_filter.regex == Whitelist(raw).regex


def test_to_registration_refuses_what_scala_could_not_read_back() -> None:
    with pytest.raises(ValueError):
        to_registration(StaticSubscription((("orders", 1), ("orders", 2))), 1)
    with pytest.raises(ValueError):
        to_registration(StaticSubscription((("bad topic", 1),)), 1)
    for streams in (0, True, "2"):
        with pytest.raises(ValueError):
            to_registration(WildcardSubscription(Whitelist("a"), streams), 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        to_registration(StaticSubscription.of({"a": 1}), 1.5)  # type: ignore[arg-type]


def test_scala_written_wildcards_read_like_scala() -> None:
    # 1.0.0 wrote the CoreUtils-escaped key raw, so readers see the regex itself...
    old = Registration.decode(
        rb'{"version":1,"subscription":{"orders-\\d+":2},"pattern":"white_list","timestamp":"1"}', "/p"
    )
    # ...1.1.1 escaped it once more, so readers see (and match with) a doubled backslash.
    new = Registration.decode(
        rb'{"version":1,"subscription":{"orders-\\\\d+":2},"pattern":"white_list","timestamp":"1"}', "/p"
    )
    assert from_registration(old) == WildcardSubscription(Whitelist("orders-\\d+"), 2)
    assert from_registration(new) == WildcardSubscription(Whitelist("orders-\\\\d+"), 2)
    assert thread_ids_for("c", from_registration(old), ALL) == {"orders-1": ["c-0", "c-1"], "orders-22": ["c-0", "c-1"]}
    assert thread_ids_for("c", from_registration(new), ALL) == {}  # what Kafka 1.1.1 computes too


def test_from_registration_edge_cases() -> None:
    def read(text: bytes):  # noqa: ANN202 - local helper
        return from_registration(Registration.decode(text, "/p"))

    assert read(b'{"pattern":"white_list","subscription":{}}') == StaticSubscription(())
    assert read(b'{"pattern":"bogus","subscription":{"x":1,"y":2}}') == StaticSubscription((("x", 1), ("y", 2)))
    assert read(b'{"pattern":"black_list","subscription":{"x.*":2,"y":1}}') == WildcardSubscription(Blacklist("x.*"), 2)
    five = b'{"pattern":"white_list","subscription":{"zeta":1,"alpha":1,"metrics":1,"orders":1,"payments":1}}'
    assert read(five) == WildcardSubscription(Whitelist("alpha"), 1)  # Scala HashMap order, per Kafka 1.1.1
    assert read(b'{"pattern":"white_list","subscription":{" \\"x.*, y \\" ":1}}').topic_filter.regex == "x.*|y"
    with pytest.raises(ValueError, match="invalid regex"):
        read(b'{"pattern":"white_list","subscription":{"[":1}}')


def test_scala_map_head_orders() -> None:
    pairs = tuple((k, 1) for k in ("d", "c", "b", "a"))
    assert scala_map_head(pairs) == ("d", 1)  # Map4 keeps insertion order
    assert scala_map_head(pairs + (("e", 1),))[0] == scala_map_head((("e", 1),) + pairs)[0]


@given(
    st.dictionaries(TOPIC, st.integers(1, 2**31 - 1), min_size=1),
    st.integers(0, 2**63 - 1),
    st.sampled_from([V0_10, V1_0_0, V1_1]),
)
def test_static_round_trip(counts: dict[str, int], millis: int, compat: Compat) -> None:
    subscription = StaticSubscription.of(counts)
    data = encode_registration(subscription, millis, compat)
    assert data == encode_registration(subscription, millis, V1_1)  # every writer agrees on legal topic names
    registration = Registration.decode(data, "/p")
    assert registration.timestamp == str(millis)
    decoded = from_registration(registration)
    assert isinstance(decoded, StaticSubscription)
    assert dict(decoded.topic_counts) == dict(subscription.topic_counts)  # > 4 topics: Scala's key order


@given(st.from_regex(r"[A-Za-z0-9._*+?|()\[\]{}^$/\\ ,'\"-]{1,30}", fullmatch=True), st.integers(1, 64), st.booleans())
def test_wildcard_round_trip_per_writer(raw: str, streams: int, black: bool) -> None:
    try:
        topic_filter = (Blacklist if black else Whitelist)(raw)
    except ValueError:
        return  # not a regex both Java and Python read the same way
    subscription = WildcardSubscription(topic_filter, streams)
    if not topic_filter.regex:
        return
    old = from_registration(Registration.decode(encode_registration(subscription, 1, V1_0_0), "/p"))
    assert old == subscription  # before 1.0.1 readers get the regex back unchanged
    new = Registration.decode(encode_registration(subscription, 1, V1_1), "/p")
    if "\\" not in topic_filter.regex and "/" not in topic_filter.regex and '"' not in topic_filter.regex:
        assert from_registration(new) == subscription


# ---------------------------------------------------------------- consumer ids


def test_make_consumer_id() -> None:
    uuid_int = 0x1A2B3C4D5E6F7081_92A3B4C5D6E7F809
    assert (
        make_consumer_id("g1", hostname="hostA", now_ms=1510000000000, uuid_int=uuid_int)
        == "g1_hostA-1510000000000-1a2b3c4d"
    )
    assert make_consumer_id("g1", "fixed", hostname="h", now_ms=0, uuid_int=0) == "g1_fixed"
    assert make_consumer_id("g1", "", hostname="h", now_ms=0, uuid_int=0) == "g1_"  # Scala: Option("") is Some("")
    # Long.toHexString of a negative MSB is its unsigned two's-complement hex; leading zeros are dropped.
    assert make_consumer_id("g", hostname="h", now_ms=1, uuid_int=0xF000000000000001 << 64).endswith("-f0000000")
    assert make_consumer_id("g", hostname="h", now_ms=1, uuid_int=0x0123456789ABCDEF << 64).endswith("-12345678")
    with pytest.raises(ValueError):
        make_consumer_id("g", hostname="h", now_ms=1, uuid_int=-1)
