"""Tests for zkconsumer.zookeeper.znodes and cluster.broker_nodes: paths and byte-exact codecs, with golden bytes checked against Kafka 1.1.1."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.cluster.broker_nodes import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    decode_broker,
    decode_partition_state,
    decode_topic_partitions,
    encode_broker,
    encode_topic_partitions,
)
from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.kafkajson import coreutils_json_escape
from zkconsumer.zookeeper.znodes import Registration, decode_offset, encode_offset

TOPIC = st.from_regex(r"[A-Za-z0-9._-]{1,249}", fullmatch=True)
INT32 = st.integers(-(2**31), 2**31 - 1)
STATIC_REF = b'{"version":1,"subscription":{"orders":2,"payments":1},"pattern":"static","timestamp":"1510000000000"}'


# ---------------------------------------------------------------- errors and paths


def test_zkdata_error_names_the_path_and_pickles() -> None:
    error = ZkDataError("/consumers/g/ids/c", "broken")
    assert isinstance(error, ValueError)
    assert (error.path, error.reason, str(error)) == ("/consumers/g/ids/c", "broken", "/consumers/g/ids/c: broken")
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.path, clone.reason) == (error.path, error.reason)


def test_paths_match_zkutils() -> None:
    assert znodes.group_path("g") == "/consumers/g"
    assert znodes.ids_path("g") == "/consumers/g/ids"
    assert znodes.member_path("g", "g_h-1-ab") == "/consumers/g/ids/g_h-1-ab"
    assert znodes.owners_path("g") == "/consumers/g/owners"
    assert znodes.owners_path("g", "t") == "/consumers/g/owners/t"
    assert znodes.owner_path("g", "t", 3) == "/consumers/g/owners/t/3"
    assert znodes.offsets_path("g") == "/consumers/g/offsets"
    assert znodes.offsets_path("g", "t") == "/consumers/g/offsets/t"
    assert znodes.offset_path("g", "t", 0) == "/consumers/g/offsets/t/0"
    assert znodes.broker_path(7) == "/brokers/ids/7"
    assert znodes.topic_path("t") == "/brokers/topics/t"
    assert znodes.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert (znodes.CONSUMERS, znodes.BROKER_IDS, znodes.BROKER_TOPICS) == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: znodes.group_path(""),
        lambda: znodes.group_path("a/b"),
        lambda: znodes.member_path("g", ".."),
        lambda: znodes.owners_path("g", "."),
        lambda: znodes.owner_path("g", "t", True),
        lambda: znodes.offset_path("g", "t", "1"),
        lambda: znodes.topic_path("a/b"),
    ],
)
def test_paths_reject_components_that_would_break_the_tree(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_parse_offset_path() -> None:
    assert znodes.parse_offset_path("/consumers/g-1/offsets/orders/12") == ("g-1", "orders", 12)
    assert znodes.parse_offset_path(znodes.offset_path("g", "t", 0)) == ("g", "t", 0)


@pytest.mark.parametrize(
    "path",
    [
        "/consumers/g/offsets/t",
        "/consumers/g/owners/t/1",
        "consumers/g/offsets/t/1",
        "/consumers//offsets/t/1",
        "/consumers/g/offsets/t/01",
        "/consumers/g/offsets/t/+1",
        "/consumers/g/offsets/t/x",
        "/consumers/g/offsets/t/",
        "/consumers/g/offsets/t/1/2",
        "/consumers/g/offsets/t/99999999999",
    ],
)
def test_parse_offset_path_rejects_everything_else(path: str) -> None:
    with pytest.raises(ZkDataError) as info:
        znodes.parse_offset_path(path)
    assert info.value.path == path


# ---------------------------------------------------------------- registrations


def test_reference_static_registration_bytes() -> None:
    registration = Registration((("orders", 2), ("payments", 1)), "static", "1510000000000")
    assert registration.encode() == STATIC_REF
    assert registration.encode(jackson=False) == STATIC_REF  # pre-1.0.1 writer: same bytes for topic names
    assert Registration.decode(STATIC_REF, "/p") == registration


def test_wildcard_key_escaping_per_writer() -> None:
    # The key handed to the writer is CoreUtils-escaped already ("orders-\\d+" for regex orders-\d+).
    registration = Registration(((coreutils_json_escape("orders-\\d+"), 2),), "white_list", "1510000000000")
    # Golden from Kafka 1.1.1 (Jackson escapes the escaped key again) and from the 1.0.0 raw writer.
    assert (
        registration.encode()
        == rb'{"version":1,"subscription":{"orders-\\\\d+":2},"pattern":"white_list","timestamp":"1510000000000"}'
    )
    assert (
        registration.encode(jackson=False)
        == rb'{"version":1,"subscription":{"orders-\\d+":2},"pattern":"white_list","timestamp":"1510000000000"}'
    )


def test_escapers_match_coreutils_and_jackson() -> None:
    text = "".join(map(chr, range(0x20))) + '\x7f\x80\x9f\xa0\u2028\ufeff\U0001f600/"\\'
    core = (
        "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
        "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d"
        '\\u001e\\u001f\\u007f\\u0080\\u009f\xa0\u2028\ufeff\U0001f600\\/\\"\\\\'
    )
    jackson = (
        "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000B\\f\\r\\u000E\\u000F"
        "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001A\\u001B\\u001C\\u001D"
        '\\u001E\\u001F\x7f\x80\x9f\xa0\u2028\ufeff\U0001f600/\\"\\\\'
    )
    assert coreutils_json_escape(text) == core
    encoded = Registration(((text, 1),), "p", "t").encode()
    assert encoded == ('{"version":1,"subscription":{"' + jackson + '":1},"pattern":"p","timestamp":"t"}').encode()


# Each case below was fed to TopicCount.constructTopicCount of Kafka 1.1.1 with the same outcome.
ACCEPTED = [
    (b'{"pattern":"white_list","subscription":{"a\\d":1}}', (("a\\d", 1),), "white_list"),  # backslash retry
    (b'{"pattern":"white_list","subscription":{"a":1}} trailing garbage', (("a", 1),), "white_list"),
    (b'{"pattern":"static","subscription":{"a":1}}\x00', (("a", 1),), "static"),
    (b'{"pattern":"static","subscription":{}}', (), "static"),
    (b'{"pattern":"bogus","subscription":{"x":1,"y":2}}', (("x", 1), ("y", 2)), "bogus"),
    (b'{"pattern":"static","subscription":{"a":1,"a":3,"b":1}}', (("a", 3), ("b", 1)), "static"),
    (b'{"pattern":"static","subscription":{"a":-0}}', (("a", 0),), "static"),
    (b'{"pattern":"static","subscription":{"a":0}}', (("a", 0),), "static"),  # fails later, at thread ids
    (b'  \n{"pattern":"static","subscription":{"a":2147483647}}', (("a", 2**31 - 1),), "static"),
]


@pytest.mark.parametrize(("data", "subscription", "pattern"), ACCEPTED)
def test_registration_decode_is_as_tolerant_as_scala(data: bytes, subscription: tuple, pattern: str) -> None:
    registration = Registration.decode(data, "/consumers/g/ids/c")
    assert (registration.subscription, registration.pattern) == (subscription, pattern)
    assert (registration.version, registration.timestamp) == (None, None)


def test_registration_keeps_oddly_typed_version_and_timestamp_as_none() -> None:
    registration = Registration.decode(b'{"pattern":"static","subscription":{"a":1},"version":"x","timestamp":5}', "/p")
    assert (registration.version, registration.timestamp) == (None, None)
    with pytest.raises(ValueError):
        registration.encode()


REJECTED = [
    b'{"pattern":"white_list","subscription":{"a":1}',
    b"",
    b"   ",
    '\ufeff{"pattern":"static","subscription":{}}'.encode(),
    b'{"pattern":"static","subscription":{"a":2.0}}',
    b'{"pattern":"static","subscription":{"a":3000000000}}',
    b'{"pattern":"static","subscription":{"a":true}}',
    b'{"pattern":null,"subscription":{"a":1}}',
    b'{"pattern":"static","subscription":[]}',
    b'{"subscription":{"a":1}}',
    b'{"pattern":"static"}',
    b"[1]",
    b'{"pattern":"static","subscription":{"a":NaN}}',
    b"{'pattern':'static'}",
    b'{"pattern":"static","subscription":{"a":1e0}}',
    b'{"pattern":"static","subscription":{"a":01}}',
    b'{"pattern":"static","subscription":{"\xff":1}}',
    b"1{}",
    b'{"pattern":"static","subscription":{"a":' + b"9" * 60 + b"}}",
    b"[" * 5000,
]


@pytest.mark.parametrize("data", REJECTED)
def test_registration_decode_rejects_what_scala_rejects(data: bytes) -> None:
    with pytest.raises(ZkDataError) as info:
        Registration.decode(data, "/consumers/g/ids/c")
    assert info.value.path == "/consumers/g/ids/c"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subscription": (("a", True),)},
        {"subscription": (("a", 1), ("a", 2))},
        {"subscription": (("a", 2**31),)},
        {"subscription": ((1, 1),)},
        {"pattern": None},
        {"timestamp": 5},
        {"version": "1"},
    ],
)
def test_registration_rejects_what_no_writer_produces(kwargs: dict) -> None:
    fields = {"subscription": (("a", 1),), "pattern": "static", "timestamp": "1", **kwargs}
    with pytest.raises(ValueError):
        Registration(**fields)


@given(
    st.lists(st.tuples(st.text(st.characters(blacklist_categories=("Cs",))), INT32), unique_by=lambda p: p[0]),
    st.text(st.characters(blacklist_categories=("Cs",))),
    st.text(st.characters(blacklist_categories=("Cs",))),
    INT32,
)
def test_jackson_registration_round_trips(pairs: list, pattern: str, timestamp: str, version: int) -> None:
    registration = Registration(tuple(pairs), pattern, timestamp, version)
    assert Registration.decode(registration.encode(), "/p") == registration


@given(
    st.lists(st.tuples(TOPIC, st.integers(1, 2**31 - 1)), min_size=1, unique_by=lambda p: p[0]),
    st.integers(0, 2**63 - 1),
)
def test_both_writers_agree_on_topic_names(pairs: list, millis: int) -> None:
    registration = Registration(tuple(pairs), "static", str(millis))
    assert registration.encode() == registration.encode(jackson=False)
    assert Registration.decode(registration.encode(), "/p") == registration


# ---------------------------------------------------------------- owners and offsets


def test_owner_codec() -> None:
    assert znodes.encode_owner("g1_hostA-1510000000000-1a2b3c4d-0") == b"g1_hostA-1510000000000-1a2b3c4d-0"
    assert znodes.decode_owner(b"g1_hostA-1510000000000-1a2b3c4d-0", "/o") == "g1_hostA-1510000000000-1a2b3c4d-0"
    with pytest.raises(ZkDataError, match="/o: data is not valid UTF-8"):
        znodes.decode_owner(b"\xc3", "/o")
    with pytest.raises(ValueError):
        znodes.encode_owner("")


def test_consumer_id_of_thread() -> None:
    assert znodes.consumer_id_of_thread("g1_hostA-1510000000000-1a2b3c4d-12") == "g1_hostA-1510000000000-1a2b3c4d"
    assert znodes.consumer_id_of_thread("g_c-0") == "g_c"
    for bad in ("nodash", "-1", "g_c-", "g_c-x", "g_c-+1"):
        with pytest.raises(ValueError):
            znodes.consumer_id_of_thread(bad)


# StringOps.toLong on Kafka 1.1.1 (java.lang.Long.parseLong), case by case.
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5", 5),
        ("-1", -1),
        ("+5", 5),
        ("007", 7),
        ("\u0663", 3),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        (" 5", None),
        ("5\n", None),
        ("", None),
        ("0x10", None),
        ("1_0", None),
        ("-", None),
        ("9223372036854775808", None),
        ("1e3", None),
        ("\u00b2", None),
    ],
)
def test_decode_offset_is_strict_to_long(text: str, value: int | None) -> None:
    if value is None:
        with pytest.raises(ZkDataError, match="^/consumers/g/offsets/t/0: "):
            decode_offset(text.encode(), "/consumers/g/offsets/t/0")
    else:
        assert decode_offset(text.encode(), "/p") == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_offset_round_trip(offset: int) -> None:
    assert encode_offset(offset) == str(offset).encode()
    assert decode_offset(encode_offset(offset), "/p") == offset


@pytest.mark.parametrize("bad", [2**63, -(2**63) - 1, True, 1.0, "1"])
def test_encode_offset_rejects_non_longs(bad: object) -> None:
    with pytest.raises(ValueError):
        encode_offset(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- brokers

KAFKA39_V5 = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"port":9092,"host":"127.0.0.1",'
    b'"version":5,"timestamp":"1700000000000"}'
)
BROKER_GOLDEN = {  # what brokers writing each version put in ZooKeeper (key order included)
    1: b'{"jmx_port":-1,"timestamp":"1428512949385","host":"h1","version":1,"port":9092}',
    2: b'{"jmx_port":-1,"timestamp":"1428512949385","endpoints":["PLAINTEXT://h1:9092"],"host":"h1","version":2,'
    b'"port":9092}',
    3: b'{"jmx_port":-1,"timestamp":"1428512949385","endpoints":["PLAINTEXT://h1:9092"],"host":"h1","version":3,'
    b'"port":9092,"rack":"r1"}',
    4: b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h1:9092"],'
    b'"rack":"r1","jmx_port":-1,"host":"h1","timestamp":"1428512949385","port":9092,"version":4}',
}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_broker_versions_decode_and_re_encode(version: int) -> None:
    info = decode_broker(1, BROKER_GOLDEN[version], "/brokers/ids/1")
    assert info.version == version and info.jmx_port == -1 and info.timestamp == "1428512949385"
    assert info.plaintext_address() == ("h1", 9092)
    assert info.rack == ("r1" if version >= 3 else None)
    assert encode_broker(info) == BROKER_GOLDEN[version]


def test_kafka39_v5_broker() -> None:
    info = decode_broker(0, KAFKA39_V5, "/brokers/ids/0")
    assert info == BrokerInfo(
        0,
        "127.0.0.1",
        9092,
        ("PLAINTEXT://127.0.0.1:9092",),
        None,
        5,
        -1,
        "1700000000000",
        (("PLAINTEXT", "PLAINTEXT"),),
    )
    assert info.end_points() == (EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),)
    assert info.plaintext_address() == ("127.0.0.1", 9092)
    assert encode_broker(info) == KAFKA39_V5


# Outcomes of BrokerIdZNode.decode + ClientUtils' PLAINTEXT choice on Kafka 1.1.1.
@pytest.mark.parametrize(
    ("json_text", "address"),
    [
        ('{"version":1,"host":"h1","port":9092,"jmx_port":-1,"endpoints":["SSL://x:1"]}', ("h1", 9092)),
        ('{"version":2,"jmx_port":-1,"endpoints":["SSL://h3:9094","PLAINTEXT://h2:9093"]}', ("h2", 9093)),
        ('{"version":2,"jmx_port":-1,"endpoints":["plaintext://h2:9093"]}', ("h2", 9093)),
        (
            '{"version":4,"jmx_port":-1,"endpoints":["INTERNAL://h2:9093","CLIENT://h4:1"],'
            '"listener_security_protocol_map":{"INTERNAL":"SSL","CLIENT":"plaintext"}}',
            ("h4", 1),
        ),
        (
            '{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],"listener_security_protocol_map":{"PLAINTEXT":"ssl"}}',
            None,
        ),
        ('{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://[::1]:9092"],"rack":null}', ("::1", 9092)),
        ('{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://[fe80::1%eth0]:1","SSL://h:2"]}', ("fe80::1%eth0", 1)),
        ('{"version":3,"jmx_port":-1,"endpoints":["PLAINTEXT://:9092"],"rack":"r1"}', None),
        ('{"version":3,"jmx_port":-1,"endpoints":[]}', None),
        ('{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:01"]} junk', ("h", 1)),
        (
            '\ufeff{"version":2,"jmx_port":-1,"endpoints":["A://B://h:1"],"listener_security_protocol_map":{"A://B":"SSL"}}',
            None,
        ),
    ],
)
def test_broker_decode_matches_kafka_11(json_text: str, address: tuple | None) -> None:
    assert decode_broker(7, json_text.encode(), "/brokers/ids/7").plaintext_address() == address


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":1,"host":"h1","port":9092}',
        b'{"version":2,"endpoints":["PLAINTEXT://h:1"]}',
        b'{"version":2,"jmx_port":-1,"endpoints":["INTERNAL://h2:9093"]}',
        b'{"version":4,"jmx_port":-1,"endpoints":["internal://h:1"],"listener_security_protocol_map":{"internal":"SSL"}}',
        b'{"version":4,"jmx_port":-1,"endpoints":["I://h:1"],"listener_security_protocol_map":{"I":"BOGUS"}}',
        b'{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],"listener_security_protocol_map":{}}',
        b'{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],"listener_security_protocol_map":null}',
        b'{"version":3,"jmx_port":-1,"endpoints":["PLAINTEXT://h:-1"],"rack":5}',
        b'{"version":3,"jmx_port":-1,"endpoints":["PLAINTEXT://h:99999999999"]}',
        b'{"version":3,"jmx_port":-1,"endpoints":["PLAINTEXT://h"]}',
        b'{"version":3,"jmx_port":-1,"endpoints":["P://h:1/x"]}',
        b'{"version":3,"jmx_port":-1,"endpoints":["PLAINTEXT://h x:1"]}',
        b'{"version":0,"jmx_port":-1,"endpoints":[]}',
        b'{"version":5,"jmx_port":-1,"endpoints":["TRACE://h:1"]}',
        b'{"version":"2","jmx_port":-1,"endpoints":[]}',
        b'{"version":2,"jmx_port":-1,"endpoints":"PLAINTEXT://h:1"}',
        b'{"version":1,"jmx_port":-1,"host":null,"port":1}',
        b'{"version":1,"jmx_port":-1,"host":"h","port":"1"}',
        b'{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:\\n1"]}',
        '{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://h:\u0663"]}'.encode(),
        b'{"version":4,"jmx_port":-1,"endpoints":["PLAINTEXT://a:1","plaintext://b:2"]}',
        b'{"version":2,"jmx_port":-1,"endpoints":["PLAINTEXT://h\xff:1"]}',
        b"",
        b"[]",
        b"{",
    ],
)
def test_broker_decode_rejects_what_kafka_11_rejects(data: bytes) -> None:
    with pytest.raises(ZkDataError) as info:
        decode_broker(7, data, "/brokers/ids/7")
    assert info.value.path == "/brokers/ids/7"


# ---------------------------------------------------------------- topics and partition state


@pytest.mark.parametrize(
    ("text", "partitions"),
    [  # ZkUtils.getPartitionsForTopics on Kafka 1.1.1
        ('{"version":1,"partitions":{"1":[1],"0":[2,3],"10":[1],"2":[]}}', [0, 1, 2, 10]),
        ("garbage", []),
        ("", []),
        ('{"version":1}', []),
        ('{"partitions":{"-1":[1]}}', [-1]),
        ('{"partitions":{"+1":[1]}}', [1]),
        ('{"partitions":{"1":[1]}} x', [1]),
        ("1{}", []),
        ('{"x":"\\d"}', []),
    ],
)
def test_topic_partitions_like_scala(text: str, partitions: list[int]) -> None:
    assert list(decode_topic_partitions(text.encode(), "/brokers/topics/t")) == partitions


@pytest.mark.parametrize(
    "text",
    [
        '{"partitions":[]}',
        '{"partitions":{"x":[1]}}',
        '{"partitions":{"1":[1.0]}}',
        '{"partitions":{"1":"a"}}',
        '{"partitions":{" 1":[1]}}',
        '{"partitions":null}',
        "[1]",
        '{"partitions":{"1":null}}',
        '{"partitions":{"1":[null]}}',
    ],
)
def test_topic_partitions_errors_like_scala(text: str) -> None:
    with pytest.raises(ZkDataError, match="^/brokers/topics/t: "):
        decode_topic_partitions(text.encode(), "/brokers/topics/t")


@given(st.dictionaries(st.integers(0, 2**31 - 1), st.lists(st.integers(0, 2**31 - 1), max_size=5)))
def test_topic_partitions_round_trip(partitions: dict[int, list[int]]) -> None:
    data = encode_topic_partitions(partitions)
    assert decode_topic_partitions(data, "/t") == dict(sorted(partitions.items()))


def test_encode_topic_partitions_golden() -> None:
    assert encode_topic_partitions({0: [1, 2], 1: [2]}) == b'{"version":1,"partitions":{"0":[1,2],"1":[2]}}'


def test_partition_state() -> None:
    state = decode_partition_state(b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":3,"isr":[0,2]}', "/s")
    assert state == LeaderAndIsr(leader=0, leader_epoch=3, isr=(0, 2), controller_epoch=1, version=1)
    newer = b'{"controller_epoch":1,"leader":-1,"leader_recovery_state":0,"leader_epoch":3,"isr":[]}'
    assert decode_partition_state(newer, "/s").version is None
    for bad in (b"", b"{}", b'{"leader":0,"leader_epoch":0,"isr":"0","controller_epoch":1}', b"\xff"):
        with pytest.raises(ZkDataError, match="^/s: "):
            decode_partition_state(bad, "/s")
