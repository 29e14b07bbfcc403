"""How each consumer property is read and checked: its spec (type, default, bounds) and the cross-property rules."""

from __future__ import annotations

import difflib
import re
import warnings
from dataclasses import dataclass
from typing import Any

from zkconsumer.config.compat import DEFAULT_VERSION
from zkconsumer.errors import ZkConsumerError

# Kafka's SecurityProtocol names as of 1.1 (TRACE is gone): broker endpoints and librdkafka.security.protocol.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
DEFAULT_ZOOKEEPER_PORT = 2181
_LEGAL_ID = re.compile(r"[A-Za-z0-9._-]*")  # kafka.common.Config.validateChars, ASCII only
_HOSTNAME = re.compile(r"[A-Za-z0-9._-]+")


class ConfigError(ZkConsumerError, ValueError):
    """A consumer property is missing or invalid; ``key`` names it (None for a parse error)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the two-argument __init__
        return (type(self), (self.key, str(self)))


def invalid_value(key: str, value: object, accepted: str, problem: str = "") -> ConfigError:
    """The error for a property's refused value, naming the key, the value and what is accepted."""
    detail = f" ({problem})" if problem else ""
    return ConfigError(key, f"invalid value {value!r} for consumer property {key!r}{detail}; accepted: {accepted}")


@dataclass(frozen=True)
class _Spec:
    """How one property is read: its attribute, type, default and lower bound."""

    name: str
    kind: type  # str, int or bool
    default: object = None  # None: required, derived or unset
    minimum: int | None = None
    choices: tuple[str, ...] = ()

    @property
    def attr(self) -> str:
        return {"zkconsumer.compat.version": "compat"}.get(
            self.name, self.name.removeprefix("zkconsumer.").replace(".", "_")
        )


_SPECS = (
    _Spec("zookeeper.connect", str),
    _Spec("zookeeper.session.timeout.ms", int, 6000, minimum=1),
    _Spec("zookeeper.connection.timeout.ms", int, minimum=1),
    _Spec("zookeeper.sync.time.ms", int, 2000, minimum=0),
    _Spec("group.id", str),
    _Spec("consumer.id", str),
    _Spec("socket.timeout.ms", int, 30000, minimum=0),
    _Spec("socket.receive.buffer.bytes", int, 64 * 1024),
    _Spec("fetch.message.max.bytes", int, 1024 * 1024, minimum=1),
    _Spec("fetch.max.bytes", int, 50 * 1024 * 1024),
    _Spec("num.consumer.fetchers", int, 1, minimum=1),
    _Spec("auto.commit.enable", bool, True),
    _Spec("auto.commit.interval.ms", int, 60000),
    _Spec("queued.max.message.chunks", int, 2, minimum=1),
    _Spec("rebalance.max.retries", int, 4, minimum=1),
    _Spec("rebalance.backoff.ms", int, minimum=0),
    _Spec("refresh.leader.backoff.ms", int, 200, minimum=0),
    _Spec("fetch.min.bytes", int, 1),
    _Spec("fetch.wait.max.ms", int, 100, minimum=0),
    _Spec("auto.offset.reset", str, "largest", choices=("smallest", "largest")),
    _Spec("consumer.timeout.ms", int, -1),
    _Spec("client.id", str),
    _Spec("offsets.storage", str, "zookeeper", choices=("zookeeper", "kafka")),
    _Spec("offsets.channel.backoff.ms", int, 1000, minimum=0),
    _Spec("offsets.channel.socket.timeout.ms", int, 10000, minimum=0),
    _Spec("offsets.commit.max.retries", int, 5, minimum=0),
    _Spec("dual.commit.enabled", bool),
    _Spec("partition.assignment.strategy", str, "range", choices=("range", "roundrobin")),
    _Spec("exclude.internal.topics", bool, True),
    _Spec("zkconsumer.compat.version", str, DEFAULT_VERSION),
    _Spec("zkconsumer.rebalance.recheck.ms", int, 30000, minimum=0),
    _Spec("zkconsumer.rebalance.incremental", bool, True),
    _Spec("zkconsumer.rebalance.watched.wait.ms", int, minimum=0),
    _Spec("zkconsumer.watchdog.interval.ms", int, 10000, minimum=0),
    _Spec("zkconsumer.release.linger.ms", int, 1000, minimum=0),
    _Spec("zkconsumer.release.linger.max.ms", int, minimum=0),  # default: config/timing.py
    _Spec("zkconsumer.fetch.in.reader", bool, True),
    _Spec("zkconsumer.zookeeper.digest", str),
    _Spec("zkconsumer.broker.listener", str),
    _Spec("zkconsumer.coordination", str, "zookeeper", choices=("zookeeper", "broker")),
    _Spec("zookeeper.sasl.jaas.config", str),
    _Spec("java.security.auth.login.config", str),
    _Spec("zookeeper.sasl.clientconfig", str, "Client"),
    _Spec("zookeeper.sasl.client", bool, True),
    _Spec("zookeeper.set.acl", bool),
    _Spec("zkconsumer.zookeeper.jute.maxbuffer", int, 0xFFFFF, minimum=4096),
    _Spec("zkconsumer.zookeeper.transaction.max.bytes", int, minimum=1024),
    _Spec("zkconsumer.zookeeper.tick.ms", int, 2000, minimum=1),
)
_SPEC_BY_NAME = {spec.name: spec for spec in _SPECS}
REQUIRED = ("zookeeper.connect", "group.id")
KNOWN_PROPERTIES = tuple(_SPEC_BY_NAME)


def _java_trim(text: str) -> str:
    """String.trim(): strips every char <= U+0020, which VerifiableProperties applies to all values."""
    return text.strip("".join(map(chr, range(0x21))))


def _read(spec: _Spec, raw: object) -> object:
    """Convert one supplied value (str from .properties, or native) to the property's type."""
    key = spec.name
    if spec.kind is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and _java_trim(raw) in ("true", "false"):
            return _java_trim(raw) == "true"  # Scala requires exactly these, case-sensitive
        raise invalid_value(key, raw, "true | false")
    if spec.kind is int:
        accepted = "any 32-bit integer" if spec.minimum is None else f"integer >= {spec.minimum}"
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise invalid_value(key, raw, accepted, "not a decimal integer")
        if isinstance(raw, str):
            if not re.fullmatch(r"[+-]?[0-9]+", _java_trim(raw)):
                raise invalid_value(key, raw, accepted, "not a decimal integer")
            number = int(_java_trim(raw))
        else:
            number = raw
        if not INT_MIN <= number <= INT_MAX:
            raise invalid_value(key, raw, accepted, "outside the 32-bit range")
        if spec.minimum is not None and number < spec.minimum:
            raise invalid_value(key, raw, accepted)
        return number
    if not isinstance(raw, str):
        raise invalid_value(key, raw, "a string")
    text = _java_trim(raw)
    if key == "offsets.storage":
        text = text.lower()  # Scala lower-cases this one (Locale.ROOT) before validating
    if spec.choices and text not in spec.choices:
        raise invalid_value(key, raw, " | ".join(spec.choices))
    return text


def _check_id(key: str, value: str, *, allow_empty: bool) -> None:
    if not _LEGAL_ID.fullmatch(value) or (not value and not allow_empty):
        # Scala accepts an empty group.id, but "/consumers//ids" is not a valid znode path.
        accepted = "ASCII letters, digits, '.', '_' and '-'" + ("" if allow_empty else ", non-empty")
        raise invalid_value(key, value, accepted)


def parse_zookeeper_connect(text: str) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """Split "h1:2181,h2/chroot" like ZooKeeper's ConnectStringParser, rejecting what it would choke on."""
    accepted = "host[:port][,host[:port]...][/chroot]"
    host_list, slash, path = text.partition("/")
    chroot = slash + path if slash and path else None  # a bare "/" means no chroot, as in ZooKeeper
    if chroot is not None:
        segments = chroot[1:].split("/")
        if any(s in ("", ".", "..") or re.search(r"[\x00-\x1f\x7f-\x9f]", s) for s in segments):
            raise invalid_value(
                "zookeeper.connect",
                text,
                accepted,
                f"bad chroot {chroot!r}: no empty, '.', '..' segments or trailing '/'",
            )
    hosts: list[tuple[str, int]] = []
    for entry in host_list.split(","):
        bracketed = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::([0-9]+))?", entry)
        if bracketed:
            host, port_text = bracketed.group(1), bracketed.group(2)
        else:
            host, colon, port_text = entry.partition(":")
            port_text = port_text if colon else None
            if not _HOSTNAME.fullmatch(host) or (port_text is not None and not re.fullmatch("[0-9]+", port_text)):
                raise invalid_value("zookeeper.connect", text, accepted, f"bad host entry {entry!r}")
        port = int(port_text) if port_text else DEFAULT_ZOOKEEPER_PORT
        if not 1 <= port <= 65535:
            raise invalid_value("zookeeper.connect", text, accepted, f"port {port} outside 1..65535")
        hosts.append((host, port))
    return tuple(hosts), chroot


def _fill_derived_defaults(values: dict[str, Any]) -> None:
    """Defaults that copy another property, as in ConsumerConfig.scala; an explicit value always wins."""
    if values["zookeeper_connection_timeout_ms"] is None:
        values["zookeeper_connection_timeout_ms"] = values["zookeeper_session_timeout_ms"]
    if values["rebalance_backoff_ms"] is None:
        values["rebalance_backoff_ms"] = values["zookeeper_sync_time_ms"]
    if values["client_id"] is None:
        values["client_id"] = values["group_id"]
    if values["rebalance_watched_wait_ms"] is None:  # a dead holder's nodes go within one session timeout
        session, backoff = values["zookeeper_session_timeout_ms"], values["rebalance_backoff_ms"]
        values["rebalance_watched_wait_ms"] = min(INT_MAX, values["rebalance_max_retries"] * max(session, backoff))
    if values["dual_commit_enabled"] is None:
        values["dual_commit_enabled"] = values["offsets_storage"] == "kafka"
    if values["zookeeper_transaction_max_bytes"] is None:
        values["zookeeper_transaction_max_bytes"] = values["zookeeper_jute_maxbuffer"] // 2


def _check_combined(values: dict[str, Any]) -> None:
    """Checks that need the final values (derived defaults included)."""
    _check_id("group.id", values["group_id"], allow_empty=False)
    _check_id("client.id", values["client_id"], allow_empty=True)
    parse_zookeeper_connect(values["zookeeper_connect"])
    if values["consumer_id"] is not None and "/" in values["consumer_id"]:
        raise invalid_value("consumer.id", values["consumer_id"], "any text without '/'", "it names a znode")
    if values["fetch_wait_max_ms"] > values["socket_timeout_ms"]:  # the one Scala `require`
        raise invalid_value(
            "socket.timeout.ms",
            values["socket_timeout_ms"],
            f"integer >= fetch.wait.max.ms ({values['fetch_wait_max_ms']})",
        )
    if values["auto_commit_enable"] and values["auto_commit_interval_ms"] < 1:
        # Scala's KafkaScheduler throws on a 0 period and commits only once for a negative one.
        raise invalid_value(
            "auto.commit.interval.ms", values["auto_commit_interval_ms"], "integer >= 1 while auto.commit.enable=true"
        )
    if values["zookeeper_transaction_max_bytes"] > values["zookeeper_jute_maxbuffer"] - 1024:
        # the server drops the connection on a request over jute.maxbuffer (headers come on top)
        raise invalid_value(
            "zkconsumer.zookeeper.transaction.max.bytes",
            values["zookeeper_transaction_max_bytes"],
            f"integer <= zkconsumer.zookeeper.jute.maxbuffer - 1024 ({values['zookeeper_jute_maxbuffer'] - 1024})",
        )
    if values["broker_listener"] == "":
        values["broker_listener"] = None  # an empty value reads as unset, as Kafka's optional strings do
    digest = values["zookeeper_digest"]
    if digest is not None and not re.fullmatch(r"[^:]+:.*", digest, re.DOTALL):
        raise invalid_value("zkconsumer.zookeeper.digest", "<hidden>", "user:password")


def _passthrough_text(key: str, raw: object) -> str:
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, (str, int, float)):
        return _java_trim(str(raw))
    raise invalid_value(key, raw, "a string, number or boolean")


def _warn_unknown(key: str) -> None:
    closest = difflib.get_close_matches(key, KNOWN_PROPERTIES, n=1)
    hint = f"; did you mean {closest[0]!r}?" if closest else ""
    warnings.warn(f"unknown consumer property {key!r}{hint}", stacklevel=3)
