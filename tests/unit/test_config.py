"""Tests for zkconsumer.config and zkconsumer.config.properties: defaults, validation, .properties parsing."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkconsumer.config.consumer_config as config_module
from zkconsumer.config.checks import KNOWN_PROPERTIES, ConfigError
from zkconsumer.config.compat import Compat
from zkconsumer.config.consumer_config import ConsumerConfig, merge
from zkconsumer.config.properties import dump_properties, parse_properties

BASE = {"zookeeper.connect": "zk1:2181,zk2:2181/kafka", "group.id": "my-group"}


def build_raw(extra: dict[str, object]) -> ConsumerConfig:
    return ConsumerConfig.from_mapping({**BASE, **extra})


# --- defaults -------------------------------------------------------------------------------

EXPECTED_DEFAULTS = {
    "zookeeper.session.timeout.ms": 6000,
    "zookeeper.connection.timeout.ms": 6000,
    "zookeeper.sync.time.ms": 2000,
    "consumer.id": None,
    "socket.timeout.ms": 30000,
    "socket.receive.buffer.bytes": 65536,
    "fetch.message.max.bytes": 1048576,
    "fetch.max.bytes": 52428800,
    "num.consumer.fetchers": 1,
    "auto.commit.enable": True,
    "auto.commit.interval.ms": 60000,
    "queued.max.message.chunks": 2,
    "rebalance.max.retries": 4,
    "rebalance.backoff.ms": 2000,
    "refresh.leader.backoff.ms": 200,
    "fetch.min.bytes": 1,
    "fetch.wait.max.ms": 100,
    "auto.offset.reset": "largest",
    "consumer.timeout.ms": -1,
    "client.id": "my-group",
    "offsets.storage": "zookeeper",
    "offsets.channel.backoff.ms": 1000,
    "offsets.channel.socket.timeout.ms": 10000,
    "offsets.commit.max.retries": 5,
    "dual.commit.enabled": False,
    "partition.assignment.strategy": "range",
    "exclude.internal.topics": True,
    "zkconsumer.compat.version": "1.1.0",
    "zkconsumer.rebalance.recheck.ms": 30000,
    "zkconsumer.rebalance.incremental": True,
    "zkconsumer.rebalance.watched.wait.ms": 24000,  # rebalance.max.retries x zookeeper.session.timeout.ms
    "zkconsumer.watchdog.interval.ms": 10000,
    "zkconsumer.release.linger.ms": 1000,
    "zkconsumer.release.linger.max.ms": 3000,  # half the Scala retry budget (config/timing.py)
    "zkconsumer.fetch.in.reader": True,
    "zkconsumer.zookeeper.digest": None,
    "zkconsumer.broker.listener": None,
    "zkconsumer.coordination": "zookeeper",
    "zookeeper.sasl.jaas.config": None,
    "java.security.auth.login.config": None,
    "zookeeper.sasl.clientconfig": "Client",
    "zookeeper.sasl.client": True,
    "zookeeper.set.acl": None,
    "zkconsumer.zookeeper.jute.maxbuffer": 1048575,
    "zkconsumer.zookeeper.transaction.max.bytes": 524287,
    "zkconsumer.zookeeper.tick.ms": 2000,
}


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED_DEFAULTS.items()))
def test_default(name: str, expected: object) -> None:
    assert ConsumerConfig.from_mapping(BASE).get(name) == expected


def test_every_property_has_a_tested_default_and_a_docstring_row() -> None:
    assert set(KNOWN_PROPERTIES) == set(EXPECTED_DEFAULTS) | {"zookeeper.connect", "group.id"}
    table_names = {line.split()[0] for line in config_module.__doc__.splitlines() if line[:1].isalpha()}
    assert set(KNOWN_PROPERTIES) <= table_names
    assert "librdkafka.<name>" in table_names


def test_attributes_match_property_names() -> None:
    config = ConsumerConfig.from_mapping(BASE)
    assert config.auto_commit_enable is True
    assert config.zookeeper_connect == BASE["zookeeper.connect"]
    assert config.compat == Compat.parse("1.1")
    field_names = {f.name for f in dataclasses.fields(ConsumerConfig)}
    for name in KNOWN_PROPERTIES:
        if not name.startswith("zkconsumer."):
            assert name.replace(".", "_") in field_names
    assert {"compat", "rebalance_recheck_ms", "zookeeper_digest"} <= field_names


def test_config_is_frozen_and_hashable() -> None:
    config = ConsumerConfig.from_mapping(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.group_id = "other"  # type: ignore[misc]
    assert hash(config) == hash(ConsumerConfig.from_mapping(dict(BASE)))


# --- derived defaults -----------------------------------------------------------------------


def test_connection_timeout_follows_session_timeout_unless_given() -> None:
    assert build_raw({"zookeeper.session.timeout.ms": "9000"}).zookeeper_connection_timeout_ms == 9000
    explicit = build_raw({"zookeeper.session.timeout.ms": "9000", "zookeeper.connection.timeout.ms": "1500"})
    assert explicit.zookeeper_connection_timeout_ms == 1500


def test_rebalance_backoff_follows_sync_time_unless_given() -> None:
    assert build_raw({"zookeeper.sync.time.ms": "700"}).rebalance_backoff_ms == 700
    assert build_raw({"zookeeper.sync.time.ms": "700", "rebalance.backoff.ms": "0"}).rebalance_backoff_ms == 0


def test_client_id_follows_group_id_unless_given() -> None:
    assert build_raw({"group.id": "orders"}).client_id == "orders"
    assert build_raw({"client.id": "svc-1"}).client_id == "svc-1"
    assert build_raw({"client.id": ""}).client_id == ""  # Scala accepts an empty client.id


@pytest.mark.parametrize(("storage", "dual"), [("zookeeper", False), ("kafka", True), ("KAFKA", True)])
def test_dual_commit_follows_offsets_storage(storage: str, dual: bool) -> None:
    config = build_raw({"offsets.storage": storage})
    assert config.offsets_storage == storage.lower()
    assert config.dual_commit_enabled is dual


def test_explicit_dual_commit_wins() -> None:
    assert build_raw({"offsets.storage": "kafka", "dual.commit.enabled": "false"}).dual_commit_enabled is False
    assert build_raw({"dual.commit.enabled": True}).dual_commit_enabled is True


# --- accepted spellings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("500", 500),
        (" 500\t", 500),
        ("+500", 500),
        (500, 500),
        ("0500", 500),
    ],
)
def test_integer_spellings(raw: object, expected: int) -> None:
    assert build_raw({"fetch.min.bytes": raw}).fetch_min_bytes == expected


def test_negative_integers_where_scala_allows_them() -> None:
    assert build_raw({"consumer.timeout.ms": "-5"}).consumer_timeout_ms == -5
    assert build_raw({"socket.receive.buffer.bytes": -1}).socket_receive_buffer_bytes == -1
    assert build_raw({"fetch.min.bytes": "-2147483648"}).fetch_min_bytes == -(2**31)


@pytest.mark.parametrize(("raw", "expected"), [("true", True), ("false", False), (" false ", False), (True, True)])
def test_boolean_spellings(raw: object, expected: bool) -> None:
    assert build_raw({"exclude.internal.topics": raw}).exclude_internal_topics is expected


def test_string_values_are_trimmed_like_java() -> None:
    config = build_raw({"group.id": "  g1\t", "auto.offset.reset": " smallest\n"})
    assert (config.group_id, config.client_id, config.auto_offset_reset) == ("g1", "g1", "smallest")


def test_auto_commit_interval_is_free_when_auto_commit_is_off() -> None:
    assert build_raw({"auto.commit.enable": "false", "auto.commit.interval.ms": "0"}).auto_commit_interval_ms == 0


def test_socket_timeout_may_equal_fetch_wait() -> None:
    assert build_raw({"socket.timeout.ms": "250", "fetch.wait.max.ms": "250"}).socket_timeout_ms == 250


def test_none_means_not_given() -> None:
    assert build_raw({"consumer.id": None, "fetch.min.bytes": None}).fetch_min_bytes == 1


# --- validation -----------------------------------------------------------------------------

INVALID = [
    ("group.id", "has space"),
    ("group.id", ""),
    ("group.id", "caf\u00e9"),
    ("group.id", "a/b"),
    ("group.id", 7),
    ("client.id", "x:y"),
    ("consumer.id", "a/b"),
    ("auto.offset.reset", "earliest"),
    ("auto.offset.reset", "Smallest"),
    ("auto.offset.reset", "none"),
    ("offsets.storage", "redis"),
    ("partition.assignment.strategy", "sticky"),
    ("partition.assignment.strategy", "RoundRobin"),
    ("fetch.min.bytes", "abc"),
    ("fetch.min.bytes", "1.5"),
    ("fetch.min.bytes", "0x10"),
    ("fetch.min.bytes", ""),
    ("fetch.min.bytes", "2147483648"),
    ("fetch.min.bytes", True),
    ("fetch.min.bytes", 1.0),
    ("fetch.min.bytes", "\u0661"),  # Arabic-Indic one: Java and Python parse it; we take ASCII only
    ("auto.commit.enable", "yes"),
    ("auto.commit.enable", "TRUE"),
    ("auto.commit.enable", "1"),
    ("auto.commit.enable", 1),
    ("exclude.internal.topics", ""),
    ("zookeeper.session.timeout.ms", "0"),
    ("zookeeper.connection.timeout.ms", "0"),
    ("zookeeper.sync.time.ms", "-1"),
    ("num.consumer.fetchers", "0"),
    ("queued.max.message.chunks", "0"),
    ("rebalance.max.retries", "0"),
    ("rebalance.backoff.ms", "-1"),
    ("fetch.message.max.bytes", "0"),
    ("fetch.wait.max.ms", "-1"),
    ("socket.timeout.ms", "50"),
    ("auto.commit.interval.ms", "0"),
    ("offsets.commit.max.retries", "-1"),
    ("zookeeper.connect", ""),
    ("zookeeper.connect", "zk:port"),
    ("zookeeper.connect", "a:1,,b:2"),
    ("zookeeper.connect", "a:70000"),
    ("zookeeper.connect", "a:0"),
    ("zookeeper.connect", "a/chroot/"),
    ("zookeeper.connect", "a//x"),
    ("zookeeper.connect", "a/./x"),
    ("zookeeper.connect", "a/x/.."),
    ("zookeeper.connect", "h o:1"),
    ("zookeeper.connect", "a:1, b:2"),
    ("zookeeper.connect", "[zz]:1"),
    ("zkconsumer.compat.version", "2.0"),
    ("zkconsumer.compat.version", "latest"),
    ("zkconsumer.compat.version", "0.8.1"),
    ("zkconsumer.rebalance.recheck.ms", "-1"),
    ("zkconsumer.watchdog.interval.ms", "-5"),
    ("zkconsumer.rebalance.incremental", "yes"),
    ("zkconsumer.zookeeper.digest", "no-colon"),
    ("zkconsumer.zookeeper.digest", ":pw"),
    ("librdkafka.debug", ["a"]),
    ("librdkafka.security.protocol", "TLS"),
]


@pytest.mark.parametrize(("key", "value"), INVALID)
def test_invalid_value_names_key_value_and_accepted(key: str, value: object) -> None:
    extra = (
        {key: value, "socket.timeout.ms": "50", "fetch.wait.max.ms": "100"}
        if key == "socket.timeout.ms"
        else {key: value}
    )
    with pytest.raises(ConfigError) as caught:
        build_raw(extra)
    message = str(caught.value)
    assert caught.value.key == key
    assert repr(key) in message
    assert "\n" not in message
    assert "accepted" in message
    if key != "zkconsumer.zookeeper.digest":  # secrets are never echoed
        # Cross-field checks (socket vs fetch wait, interval vs auto-commit) show the parsed number.
        assert repr(value) in message or f"value {value} for" in message


def test_digest_error_hides_the_secret() -> None:
    with pytest.raises(ConfigError) as caught:
        build_raw({"zkconsumer.zookeeper.digest": "hunter2"})
    assert "hunter2" not in str(caught.value)


def test_socket_timeout_below_fetch_wait_names_both() -> None:
    with pytest.raises(ConfigError, match="fetch.wait.max.ms") as caught:
        build_raw({"fetch.wait.max.ms": "40000"})
    assert caught.value.key == "socket.timeout.ms"


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ({}, ["zookeeper.connect", "group.id"]),
        ({"group.id": "g"}, ["zookeeper.connect"]),
        ({"zookeeper.connect": "zk:2181"}, ["group.id"]),
    ],
)
def test_missing_required_keys_are_named(given: dict[str, str], missing: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_mapping(given)
    assert caught.value.key == missing[0]
    for name in missing:
        assert repr(name) in str(caught.value)


def test_non_string_key_is_rejected() -> None:
    with pytest.raises(ConfigError):
        ConsumerConfig.from_mapping({**BASE, 3: "x"})  # type: ignore[dict-item]


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_compat_version_parsing() -> None:
    assert build_raw({"zkconsumer.compat.version": "0.10.2"}).compat == Compat.parse("0.10.2")
    assert build_raw({"zkconsumer.compat.version": " 0.9 "}).compat.version == (0, 9, 0)
    with pytest.raises(ConfigError, match="0.8.2, 0.9"):  # Compat's accepted list reaches the user
        build_raw({"zkconsumer.compat.version": "3.0"})


# --- unknown keys ---------------------------------------------------------------------------


def test_unknown_key_warns_with_suggestion() -> None:
    with pytest.warns(
        UserWarning,
        match=r"unknown consumer property 'auto.comit.enable'; "
        r"did you mean 'auto.commit.enable'\?",
    ):
        config = build_raw({"auto.comit.enable": "false"})
    assert config.auto_commit_enable is True


def test_unknown_key_without_close_match_has_no_hint() -> None:
    with pytest.warns(UserWarning) as caught:
        build_raw({"completely.unrelated": "1"})
    assert str(caught[0].message) == "unknown consumer property 'completely.unrelated'"


@pytest.mark.parametrize("key", ["kafka.metrics.reporters", "kafka.metrics.polling.interval.secs", "external.x"])
def test_legacy_keys_we_ignore_are_silent(key: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_raw({key: "anything"})


def test_known_keys_are_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ConsumerConfig.from_mapping(ConsumerConfig.from_mapping(BASE).as_properties())


def test_get_unknown_name_raises_with_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'group.id'") as caught:
        ConsumerConfig.from_mapping(BASE).get("groupid")
    assert caught.value.key == "groupid"


# --- librdkafka passthrough, helpers, output ------------------------------------------------


def test_librdkafka_passthrough() -> None:
    config = build_raw(
        {
            "librdkafka.security.protocol": "SASL_SSL",
            "librdkafka.enable.partition.eof": True,
            "librdkafka.fetch.queue.backoff.ms": 5,
            "librdkafka.debug": " broker ",
        }
    )
    assert config.librdkafka_overrides == {
        "security.protocol": "SASL_SSL",
        "enable.partition.eof": "true",
        "fetch.queue.backoff.ms": "5",
        "debug": "broker",
    }
    assert config.get("librdkafka.security.protocol") == "SASL_SSL"
    assert config.as_properties()["librdkafka.enable.partition.eof"] == "true"
    config.librdkafka_overrides["debug"] = "all"  # a copy: the config stays unchanged
    assert config.librdkafka_overrides["debug"] == "broker"


def test_bare_librdkafka_prefix_is_an_unknown_key() -> None:
    with pytest.warns(UserWarning):
        assert build_raw({"librdkafka.": "x"}).librdkafka_overrides == {}


@pytest.mark.parametrize(
    ("connect", "hosts", "chroot"),
    [
        ("zk1:2181,zk2:2182/kafka/prod", (("zk1", 2181), ("zk2", 2182)), "/kafka/prod"),
        ("zk1", (("zk1", 2181),), None),
        ("zk1:2181/", (("zk1", 2181),), None),
        ("10.0.0.1:1,[::1]:2,[fe80::1]", (("10.0.0.1", 1), ("::1", 2), ("fe80::1", 2181)), None),
    ],
)
def test_zookeeper_hosts_and_chroot(connect: str, hosts: tuple, chroot: str | None) -> None:
    config = build_raw({"zookeeper.connect": connect})
    assert (config.zookeeper_hosts, config.zookeeper_chroot) == (hosts, chroot)


def test_as_properties_prints_like_java() -> None:
    props = build_raw({"consumer.id": "c1", "auto.commit.enable": False}).as_properties()
    assert props["auto.commit.enable"] == "false"
    assert props["rebalance.backoff.ms"] == "2000"
    assert props["consumer.id"] == "c1"
    assert "consumer.id" not in ConsumerConfig.from_mapping(BASE).as_properties()
    assert all(isinstance(v, str) for v in props.values())


def test_secrets_are_redacted_for_logs_only() -> None:
    config = build_raw({"zkconsumer.zookeeper.digest": "alice:s3cret", "librdkafka.sasl.password": "pw9"})
    assert config.as_properties()["zkconsumer.zookeeper.digest"] == "alice:s3cret"
    redacted = config.as_properties(redact=True)
    assert redacted["zkconsumer.zookeeper.digest"] == "alice:****"
    assert redacted["librdkafka.sasl.password"] == "****"
    assert "s3cret" not in repr(config) and "pw9" not in repr(config)


def test_merge_later_layers_win_and_none_does_not_erase() -> None:
    merged = merge({"group.id": "a", "fetch.min.bytes": "5"}, {"group.id": "b", "fetch.min.bytes": None}, {})
    assert merged == {"group.id": "b", "fetch.min.bytes": "5"}


# --- .properties text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a \t = \t b", {"a": "b"}),
        ("a : b", {"a": "b"}),
        ("a==b", {"a": "=b"}),
        ("a = = b", {"a": "= b"}),
        ("a b=c", {"a": "b=c"}),
        ("a=b  ", {"a": "b  "}),  # trailing blanks stay (VerifiableProperties trims later)
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("a:", {"a": ""}),
        ("   a=b", {"a": "b"}),
        ("\f\ta=b", {"a": "b"}),
        ("# a=b\n! c=d\n   # e=f", {}),
        ("#a=b\\\nc=d", {"c": "d"}),  # a comment never continues
        ("a=b\\\n   c", {"a": "bc"}),
        ("a=b\\\n   c\\\n d", {"a": "bcd"}),
        ("a=b\\\n#c", {"a": "b#c"}),  # a continuation line is never a comment
        ("a=b\\\n\nc=d", {"a": "b", "c": "d"}),  # a blank continuation line ends the entry
        ("a=b\\\\\nc=d", {"a": "b\\", "c": "d"}),  # even backslashes: no continuation
        ("a=b\\\\\\\nc", {"a": "b\\c"}),
        ("a=b\\", {"a": "b"}),  # trailing backslash at end of input is dropped
        ("a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
        ("a=\\u0041\\u00e9", {"a": "A\u00e9"}),
        ("a=\\uD83D\\uDE00", {"a": "\U0001f600"}),
        ("a=\\q\\\\", {"a": "q\\"}),
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\:b:c", {"a:b": "c"}),
        ("a\\ b c", {"a b": "c"}),
        ("a=\\ b", {"a": " b"}),
        ("\\#a=b", {"#a": "b"}),
        ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
        ("a=b\\\r\n  c", {"a": "bc"}),
        ("a=1\na=2", {"a": "2"}),
        ("\n\n  \n", {}),
        ("", {}),
    ],
)
def test_parse_properties(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize("text", ["a=\\u12", "a=\\u12G4", "a\\uXYZW=b"])
def test_malformed_unicode_escape(text: str) -> None:
    with pytest.raises(ValueError, match="uxxxx"):
        parse_properties(text)
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_properties(text)
    assert caught.value.key is None


def test_from_properties_full_example() -> None:
    text = (
        "# legacy consumer\n"
        "zookeeper.connect = zk1:2181,\\\n"
        "                    zk2:2181/kafka\n"
        "group.id: orders  \n"
        "auto.commit.enable false\n"
        "librdkafka.debug=consumer\n"
        "auto.offset.reset=largest\n"
        "auto.offset.reset=smallest\n"
    )
    config = ConsumerConfig.from_properties(text)
    assert config.zookeeper_hosts == (("zk1", 2181), ("zk2", 2181))
    assert (config.group_id, config.auto_commit_enable, config.auto_offset_reset) == ("orders", False, "smallest")
    assert config.librdkafka_overrides == {"debug": "consumer"}


def test_from_properties_file_reads_latin1_like_java(tmp_path) -> None:
    path = tmp_path / "consumer.properties"
    path.write_bytes(b"zookeeper.connect=zk:2181\ngroup.id=g\nclient.id=c\\u002d1\nlibrdkafka.x=\xe9\n")
    config = ConsumerConfig.from_properties_file(path)
    assert config.client_id == "c-1"
    assert config.librdkafka_overrides == {"x": "\u00e9"}
    assert ConsumerConfig.from_properties_file(str(path)) == config


@settings(deadline=None)  # a loaded 2-core machine makes single examples slow, not wrong
@given(st.dictionaries(st.text(min_size=1), st.text()))
def test_dump_then_parse_round_trips(props: dict[str, str]) -> None:
    assert parse_properties(dump_properties(props)) == props


# --- round trip of whole configs -------------------------------------------------------------


def _int_text(value: int) -> st.SearchStrategy[object]:
    return st.sampled_from([value, str(value), f" {value} "])


def _bool_text(value: bool) -> st.SearchStrategy[object]:
    return st.sampled_from([value, "true" if value else "false"])


@st.composite
def valid_mappings(draw: st.DrawFn) -> dict[str, object]:
    host = st.from_regex(r"[a-z][a-z0-9.-]{0,8}", fullmatch=True)
    hosts = draw(st.lists(st.tuples(host, st.integers(1, 65535)), min_size=1, max_size=3))
    segments = draw(st.lists(st.from_regex(r"[a-z0-9_]{1,5}", fullmatch=True), max_size=3))
    props: dict[str, object] = {
        "zookeeper.connect": ",".join(f"{h}:{p}" for h, p in hosts) + "".join("/" + s for s in segments),
        "group.id": draw(st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True)),
    }
    optional: dict[str, st.SearchStrategy[object]] = {
        "zookeeper.session.timeout.ms": st.integers(1, 2**31 - 1).flatmap(_int_text),
        "zookeeper.connection.timeout.ms": st.integers(1, 10**6).flatmap(_int_text),
        "zookeeper.sync.time.ms": st.integers(0, 10**6).flatmap(_int_text),
        "consumer.id": st.from_regex(r"[a-z0-9-]{0,10}", fullmatch=True),
        "socket.receive.buffer.bytes": st.integers(-(2**31), 2**31 - 1).flatmap(_int_text),
        "fetch.message.max.bytes": st.integers(1, 10**8).flatmap(_int_text),
        "fetch.max.bytes": st.integers(-5, 10**8).flatmap(_int_text),
        "num.consumer.fetchers": st.integers(1, 16).flatmap(_int_text),
        "auto.commit.enable": st.booleans().flatmap(_bool_text),
        "queued.max.message.chunks": st.integers(1, 100).flatmap(_int_text),
        "rebalance.max.retries": st.integers(1, 100).flatmap(_int_text),
        "rebalance.backoff.ms": st.integers(0, 10**6).flatmap(_int_text),
        "refresh.leader.backoff.ms": st.integers(0, 10**6).flatmap(_int_text),
        "fetch.min.bytes": st.integers(-10, 10**6).flatmap(_int_text),
        "auto.offset.reset": st.sampled_from(["smallest", "largest"]),
        "consumer.timeout.ms": st.integers(-(2**31), 2**31 - 1).flatmap(_int_text),
        "client.id": st.from_regex(r"[A-Za-z0-9._-]{0,20}", fullmatch=True),
        "offsets.storage": st.sampled_from(["zookeeper", "kafka", "Kafka", "ZOOKEEPER"]),
        "offsets.channel.backoff.ms": st.integers(0, 10**6).flatmap(_int_text),
        "offsets.channel.socket.timeout.ms": st.integers(0, 10**6).flatmap(_int_text),
        "offsets.commit.max.retries": st.integers(0, 100).flatmap(_int_text),
        "dual.commit.enabled": st.booleans().flatmap(_bool_text),
        "partition.assignment.strategy": st.sampled_from(["range", "roundrobin"]),
        "exclude.internal.topics": st.booleans().flatmap(_bool_text),
        "zkconsumer.compat.version": st.sampled_from(["0.8.2", "0.9", "0.10.1", "1.0.1", "1.1", "1.1.0"]),
        "zkconsumer.rebalance.recheck.ms": st.integers(0, 10**6).flatmap(_int_text),
        "zkconsumer.zookeeper.digest": st.from_regex(r"[a-z]{1,8}:[ -~]{0,8}", fullmatch=True),
        "zkconsumer.broker.listener": st.from_regex(r"[A-Za-z_]{1,12}", fullmatch=True),
        "librdkafka.security.protocol": st.sampled_from(["plaintext", "SSL", "sasl_ssl", "SASL_PLAINTEXT"]),
        "librdkafka.debug": st.sampled_from(["all", "broker,topic", True, 3]),
    }
    for name in draw(st.sets(st.sampled_from(sorted(optional)))):
        props[name] = draw(optional[name])
    socket_timeout = draw(st.integers(0, 10**6))
    props["socket.timeout.ms"] = draw(_int_text(socket_timeout))
    props["fetch.wait.max.ms"] = draw(st.integers(0, socket_timeout).flatmap(_int_text))
    props["auto.commit.interval.ms"] = draw(st.integers(1, 10**6).flatmap(_int_text))
    return props


@given(valid_mappings())
def test_as_properties_round_trips(props: dict[str, object]) -> None:
    config = ConsumerConfig.from_mapping(props)
    again = ConsumerConfig.from_mapping(config.as_properties())
    assert again == config
    assert ConsumerConfig.from_properties(dump_properties(config.as_properties())) == config
    assert all(again.get(name) == config.get(name) for name in KNOWN_PROPERTIES)


def test_the_transaction_budget_follows_jute_maxbuffer_and_stays_below_it() -> None:
    config = ConsumerConfig.from_mapping({**BASE, "zkconsumer.zookeeper.jute.maxbuffer": "4194304"})
    assert config.zookeeper_transaction_max_bytes == 2097152
    with pytest.raises(ConfigError, match="zkconsumer.zookeeper.transaction.max.bytes.*1047551"):
        ConsumerConfig.from_mapping({**BASE, "zkconsumer.zookeeper.transaction.max.bytes": "1048000"})


def test_the_broker_security_protocol_comes_from_librdkafka_and_defaults_to_plaintext() -> None:
    assert build_raw({}).broker_security_protocol == "PLAINTEXT"
    assert build_raw({"librdkafka.security.protocol": "sasl_ssl"}).broker_security_protocol == "SASL_SSL"
    assert build_raw({"zkconsumer.broker.listener": "EXTERNAL"}).broker_listener == "EXTERNAL"
    assert build_raw({"zkconsumer.broker.listener": " "}).broker_listener is None  # empty reads as unset


def test_a_linger_maximum_below_the_linger_is_refused_naming_the_maximum() -> None:
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_mapping(
            {**BASE, "zkconsumer.release.linger.ms": 3000, "zkconsumer.release.linger.max.ms": 2000}
        )
    assert caught.value.key == "zkconsumer.release.linger.max.ms"
    assert ConsumerConfig.from_mapping({**BASE, "zkconsumer.release.linger.max.ms": 1000}).release_linger_max_ms == 1000
