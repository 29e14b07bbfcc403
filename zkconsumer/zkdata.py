"""ZooKeeper paths of the legacy consumer and byte-exact codecs for every znode it reads or writes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zkconsumer.kafkajson import (
    _INT32,
    _INT64,
    _check_int,
    _int_field,
    _is_int32,
    _jackson_quote,
    _parse_json,
    _parse_json_lenient,
    _raw_quote,
    _show,
    _to_bytes,
    _utf8,
)
from zkconsumer.kafkajson import (
    ZkDataError as ZkDataError,  # re-exported: the error of every codec here
)

CONSUMERS = "/consumers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"


# ---------------------------------------------------------------- paths (ZkUtils / ZKGroupDirs)


def _segment(kind: str, value: str) -> str:
    # One path component: ZooKeeper rejects empty, "." and ".." components, and "/" would nest.
    if not isinstance(value, str) or value in ("", ".", "..") or "/" in value:
        raise ValueError(f"invalid {kind} for a znode path: {value!r}")
    return value


def _number(value: int, what: str = "partition") -> str:
    return str(_check_int(value, what))  # partitions are any Int a topic znode lists, even negative


def group_path(group: str) -> str:
    return f"{CONSUMERS}/{_segment('group', group)}"


def ids_path(group: str) -> str:
    return f"{group_path(group)}/ids"


def member_path(group: str, consumer_id: str) -> str:
    return f"{ids_path(group)}/{_segment('consumer id', consumer_id)}"


def zkconsumer_members_path(group: str) -> str:
    """Where zkconsumer members mark themselves (one ephemeral node each); Scala members never write here."""
    return f"{group_path(group)}/zkconsumer/members"


def zkconsumer_member_path(group: str, consumer_id: str) -> str:
    return f"{zkconsumer_members_path(group)}/{_segment('consumer id', consumer_id)}"


def encode_zkconsumer_marker(library_version: str) -> bytes:
    """The marker's data: which library wrote the member's registration (for operators and tools)."""
    return _to_bytes(f'{{"version":1,"library":"zkconsumer","library_version":{_jackson_quote(library_version)}}}')


def ingest_locks_path(group: str) -> str:
    """Where running Spark ingest jobs of the group hold their locks (one ephemeral node per topic)."""
    return f"{group_path(group)}/zkconsumer/ingest"


def ingest_lock_path(group: str, topic: str) -> str:
    """Ephemeral node held by the one Spark ingest job running for this group and topic."""
    return f"{ingest_locks_path(group)}/{topic}"


def owners_path(group: str, topic: str | None = None) -> str:
    return f"{group_path(group)}/owners" + ("" if topic is None else f"/{_segment('topic', topic)}")


def owner_path(group: str, topic: str, partition: int) -> str:
    return f"{owners_path(group, topic)}/{_number(partition)}"


def offsets_path(group: str, topic: str | None = None) -> str:
    return f"{group_path(group)}/offsets" + ("" if topic is None else f"/{_segment('topic', topic)}")


def offset_path(group: str, topic: str, partition: int) -> str:
    return f"{offsets_path(group, topic)}/{_number(partition)}"


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{_number(broker_id, 'broker id')}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{_segment('topic', topic)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{topic_path(topic)}/partitions/{_number(partition)}/state"


def parse_offset_path(path: str) -> tuple[str, str, int]:
    """ "/consumers/G/offsets/T/p" -> (G, T, p); only the canonical spelling a consumer would read."""
    parts = path.split("/") if isinstance(path, str) else []
    if (
        len(parts) != 6
        or parts[:2] != ["", "consumers"]
        or parts[3] != "offsets"
        or any(p in ("", ".", "..") for p in (parts[2], parts[4]))
    ):
        raise ZkDataError(str(path), "not a /consumers/<group>/offsets/<topic>/<partition> path")
    if not re.fullmatch(r"0|-?[1-9][0-9]{0,9}", parts[5]) or not _INT32[0] <= int(parts[5]) <= _INT32[1]:
        raise ZkDataError(path, f"partition {parts[5]!r} is not a canonical decimal int")
    return parts[2], parts[4], int(parts[5])


# ---------------------------------------------------------------- /consumers/G/ids/<consumerId>


@dataclass(frozen=True)
class Registration:
    """One member's registration document, values exactly as they appear in the JSON.

    A wildcard's single subscription key is the CoreUtils-escaped regex (what TopicCount hands to
    the writer). version/timestamp are None when a foreign writer left them out or mistyped them;
    Scala readers never look at either.
    """

    subscription: tuple[tuple[str, int], ...]
    pattern: str
    timestamp: str | None
    version: int | None = 1

    def __post_init__(self) -> None:
        pairs = tuple((key, count) for key, count in self.subscription)
        object.__setattr__(self, "subscription", pairs)
        if not all(isinstance(text, str) for text in (self.pattern, *(key for key, _ in pairs))):
            raise ValueError("pattern and subscription keys must be strings")
        if len(dict(pairs)) != len(pairs):
            raise ValueError(f"duplicate subscription keys in {pairs!r}")
        for key, count in pairs:
            _check_int(count, f"stream count of {key!r}")
        if self.version is not None:
            _check_int(self.version, "version")
        if not isinstance(self.timestamp, (str, type(None))):
            raise ValueError(f"timestamp must be a string, got {self.timestamp!r}")

    def encode(self, *, jackson: bool = True) -> bytes:
        """Bytes as registerConsumerInZK writes them: Jackson from 1.0.1, the raw-string writer before."""
        if self.version is None or self.timestamp is None:
            raise ValueError("a registration needs a version and a timestamp to be written")
        quote = _jackson_quote if jackson else _raw_quote
        counts = ",".join(f"{quote(key)}:{count}" for key, count in self.subscription)
        return _to_bytes(
            f'{{"version":{self.version},"subscription":{{{counts}}},'
            f'"pattern":{quote(self.pattern)},"timestamp":{quote(self.timestamp)}}}'
        )

    @classmethod
    def decode(cls, data: bytes, path: str) -> Registration:
        """Parse like TopicCount.constructTopicCount (1.1.1): only pattern and subscription are required."""
        doc = _parse_json_lenient(_utf8(data, path))
        if not isinstance(doc, dict):
            raise ZkDataError(path, "registration is not a JSON object" if doc is not None else "not valid JSON")
        pattern, subscription = doc.get("pattern"), doc.get("subscription")
        if not isinstance(pattern, str):
            raise ZkDataError(path, f"pattern must be a string, got {_show(pattern)}")
        if not isinstance(subscription, dict):
            raise ZkDataError(path, f"subscription must be a JSON object, got {_show(subscription)}")
        for key, count in subscription.items():
            if not _is_int32(count):
                raise ZkDataError(path, f"stream count of {key!r} must be a JSON integer, got {_show(count)}")
        version, timestamp = doc.get("version"), doc.get("timestamp")
        return cls(
            tuple(subscription.items()),
            pattern,
            timestamp if isinstance(timestamp, str) else None,
            version if _is_int32(version) else None,
        )


# ---------------------------------------------------------------- owners and offsets


def encode_owner(thread_id: str) -> bytes:
    """The owner node holds the bare thread id, no quotes."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"thread id must be a non-empty string, got {thread_id!r}")
    return _to_bytes(thread_id)


def decode_owner(data: bytes, path: str) -> str:
    return _utf8(data, path)


def consumer_id_of_thread(thread_id: str) -> str:
    """ "g_host-1-abc-12" -> "g_host-1-abc": the owner's consumer id, as the ops tools recover it."""
    consumer_id, dash, number = thread_id.rpartition("-")
    if not dash or not consumer_id or not re.fullmatch(r"[0-9]+", number):
        raise ValueError(f"not a <consumerId>-<n> thread id: {thread_id!r}")
    return consumer_id


def encode_offset(offset: int) -> bytes:
    """Long.toString: plain decimal, no padding, no newline."""
    return str(_check_int(offset, "offset", _INT64)).encode("ascii")


def _parse_java_integer(text: str, bounds: tuple[int, int]) -> int | None:
    # Long.parseLong / Integer.parseInt: one optional sign, then Unicode decimal digits, nothing else.
    if not re.fullmatch(r"[+-]?\d+", text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def decode_offset(data: bytes, path: str) -> int:
    """StringOps.toLong, so " 5", "5\\n" and "" fail while "+5" and "007" pass."""
    text = _utf8(data, path)
    value = _parse_java_integer(text, _INT64)
    if value is None:
        raise ZkDataError(path, f"offset {text[:40]!r} is not a 64-bit decimal integer")
    return value


# ---------------------------------------------------------------- /brokers/ids/<id> (BrokerIdZNode.decode, 1.1.1)

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")  # the 1.1 enum; TRACE is gone
# EndPoint.uriParseExp, matched in full; Java's "." stops at every line terminator.
_ENDPOINT = re.compile(r"([^\n\r\x85\u2028\u2029]*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


@dataclass(frozen=True)
class EndPoint:
    listener: str
    host: str | None
    port: int
    security_protocol: str


@dataclass(frozen=True)
class BrokerInfo:
    """One broker registration. host/port are only authoritative for version 1."""

    broker_id: int
    host: str | None
    port: int | None
    endpoints: tuple[str, ...]
    rack: str | None
    version: int
    jmx_port: int = -1
    timestamp: str | None = None
    listener_security_protocol_map: tuple[tuple[str, str], ...] | None = None

    def end_points(self) -> tuple[EndPoint, ...]:
        """EndPoint.createEndPoint per listener (ValueError where Scala throws); v1 has one PLAINTEXT."""
        if self.version == 1:
            return (EndPoint("PLAINTEXT", self.host, -1 if self.port is None else self.port, "PLAINTEXT"),)
        protocols = {name: name for name in SECURITY_PROTOCOLS}
        if self.listener_security_protocol_map is not None:
            protocols = {}  # keys are used as written; only endpoint listener names get upper-cased
            for listener, protocol in self.listener_security_protocol_map:
                if protocol.upper() not in SECURITY_PROTOCOLS:  # SecurityProtocol.forName
                    raise ValueError(f"unknown security protocol {protocol!r} for listener {listener!r}")
                protocols[listener] = protocol.upper()
        parsed = []
        for text in self.endpoints:
            match = _ENDPOINT.fullmatch(text)
            if match is None or not _INT32[0] <= int(match[3]) <= _INT32[1]:
                raise ValueError(f"unable to parse {text!r} to a broker endpoint")
            listener = match[1].upper()
            if listener not in protocols:
                raise ValueError(f"no security protocol defined for listener {listener}")
            parsed.append(EndPoint(listener, match[2] or None, int(match[3]), protocols[listener]))
        if len({end_point.listener for end_point in parsed}) != len(parsed):  # Broker's own check
            raise ValueError("more than one endpoint with the same listener name")
        return tuple(parsed)

    def plaintext_address(self) -> tuple[str, int] | None:
        """ClientUtils.getPlaintextBrokerEndPoints: the first PLAINTEXT endpoint; None if none is usable."""
        return self.address_for("PLAINTEXT")

    def address_for(self, security_protocol: str, listener: str | None = None) -> tuple[str, int] | None:
        """(host, port) of the endpoint named `listener`, or else of the first endpoint speaking
        `security_protocol`; None if there is none, it has no host (a wildcard bind), or the named
        listener speaks another protocol (librdkafka would fail its handshake)."""
        for end_point in self.end_points():
            if (
                end_point.listener == listener.upper()
                if listener
                else end_point.security_protocol == security_protocol.upper()
            ):
                if end_point.host is None or end_point.security_protocol != security_protocol.upper():
                    return None
                return end_point.host, end_point.port
        return None


def decode_broker(broker_id: int, data: bytes, path: str) -> BrokerInfo:
    """Decode a broker registration like 1.1.1: every version >= 2 is read through its endpoints."""
    text = _utf8(data, path)
    try:
        doc = _parse_json(text.removeprefix("\ufeff"))  # Jackson skips a UTF-8 BOM when reading bytes
    except ValueError as exc:
        raise ZkDataError(path, f"broker registration is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ZkDataError(path, f"broker registration must be a JSON object, got {_show(doc)}")
    version, jmx_port = _int_field(doc, "version", path), _int_field(doc, "jmx_port", path)
    if version < 1:
        raise ZkDataError(path, f"unsupported broker registration version {version}")
    host, port, protocol_map = doc.get("host"), doc.get("port"), None
    endpoints: Sequence[str] = ()
    if version == 1 and not isinstance(host, str):
        raise ZkDataError(path, f"field 'host' must be a string, got {_show(host)}")
    if version == 1:
        port = _int_field(doc, "port", path)
    else:
        listed = doc.get("endpoints")
        if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
            raise ZkDataError(path, "field 'endpoints' must be an array of strings")
        endpoints = listed
        protocol_map = doc.get("listener_security_protocol_map", protocol_map)
        if "listener_security_protocol_map" in doc and not (
            isinstance(protocol_map, dict) and all(isinstance(v, str) for v in protocol_map.values())
        ):
            raise ZkDataError(path, "listener_security_protocol_map must map strings to strings")
    rack, timestamp = doc.get("rack"), doc.get("timestamp")
    if not isinstance(rack, (str, type(None))):
        raise ZkDataError(path, f"field 'rack' must be a string or null, got {_show(rack)}")
    info = BrokerInfo(
        broker_id,
        host if isinstance(host, str) else None,
        port if _is_int32(port) else None,
        tuple(endpoints),
        rack,
        version,
        jmx_port,
        timestamp if isinstance(timestamp, str) else None,
        None if protocol_map is None else tuple(protocol_map.items()),
    )
    try:
        info.end_points()  # Scala parses every endpoint while decoding: one bad endpoint fails the broker
    except ValueError as exc:
        raise ZkDataError(path, str(exc)) from None
    return info


# Key orders real brokers write (Scala map iteration order): v1 0.8.x, v2 0.9, v3 0.10.0, v4 1.1, v5 3.9.
_BROKER_KEY_ORDER = {
    1: ("jmx_port", "timestamp", "host", "version", "port"),
    2: ("jmx_port", "timestamp", "endpoints", "host", "version", "port"),
    3: ("jmx_port", "timestamp", "endpoints", "host", "version", "port", "rack"),
    4: ("listener_security_protocol_map", "endpoints", "rack", "jmx_port", "host", "timestamp", "port", "version"),
    5: (
        "features",
        "listener_security_protocol_map",
        "endpoints",
        "rack",
        "jmx_port",
        "port",
        "host",
        "version",
        "timestamp",
    ),
}


def encode_broker(info: BrokerInfo, *, version: int | None = None) -> bytes:
    """Broker JSON in the shape and key order of the brokers that write that version; for fixtures."""
    version = info.version if version is None else version
    if version not in _BROKER_KEY_ORDER or info.timestamp is None:
        raise ValueError(f"can only encode versions 1..5, with a timestamp (got v{version})")
    protocol_map = info.listener_security_protocol_map
    if protocol_map is None:  # brokers always write one from v4: derive it from the listener names
        protocol_map = tuple((m[1].upper(),) * 2 for m in map(_ENDPOINT.fullmatch, info.endpoints) if m)
    values = {
        "version": str(version),
        "features": "{}",
        "host": "null" if info.host is None else _jackson_quote(info.host),
        "port": "-1" if info.port is None else _number(info.port, "port"),
        "jmx_port": _number(info.jmx_port, "jmx_port"),
        "timestamp": _jackson_quote(info.timestamp),
        "endpoints": "[" + ",".join(map(_jackson_quote, info.endpoints)) + "]",
        "rack": None if info.rack is None else _jackson_quote(info.rack),
        "listener_security_protocol_map": "{"
        + ",".join(f"{_jackson_quote(k)}:{_jackson_quote(v)}" for k, v in protocol_map)
        + "}",
    }
    fields = (f'"{key}":{values[key]}' for key in _BROKER_KEY_ORDER[version] if values[key] is not None)
    return _to_bytes("{" + ",".join(fields) + "}")


# ---------------------------------------------------------------- /brokers/topics/T and partition state


def decode_topic_partitions(data: bytes, path: str) -> dict[int, list[int]]:
    """ZkUtils.getPartitionAssignmentForTopics: partition -> replicas, sorted by partition.

    Like Scala, unparsable JSON or a missing "partitions" field means *no partitions* (no error),
    so every member of the group agrees on the same empty assignment for that topic.
    """
    doc = _parse_json_lenient(_utf8(data, path))
    if doc is None or (isinstance(doc, dict) and "partitions" not in doc):
        return {}
    partitions = doc.get("partitions") if isinstance(doc, dict) else doc
    if not isinstance(partitions, dict):
        raise ZkDataError(path, f"expected an object with a 'partitions' object, got {_show(partitions)}")
    result: dict[int, list[int]] = {}
    for key, replicas in partitions.items():
        if not isinstance(replicas, list) or not all(map(_is_int32, replicas)):
            raise ZkDataError(path, f"replicas of partition {key!r} must be an array of ints")
        partition = _parse_java_integer(key, _INT32)  # String.toInt: "+1" passes, " 1" fails
        if partition is None:
            raise ZkDataError(path, f"partition key {key!r} is not an int")
        result[partition] = list(replicas)
    return dict(sorted(result.items()))


def encode_topic_partitions(partitions: Mapping[int, Sequence[int]]) -> bytes:
    """{"version":1,"partitions":{"0":[1,2],...}} in the mapping's order, as TopicZNode.encode writes it."""
    body = ",".join(
        f'"{_number(p)}":[{",".join(_number(r, "replica") for r in replicas)}]' for p, replicas in partitions.items()
    )
    return f'{{"version":1,"partitions":{{{body}}}}}'.encode("ascii")


@dataclass(frozen=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    version: int | None


def decode_partition_state(data: bytes, path: str) -> PartitionState:
    """.../partitions/<p>/state as the ops tools read it; fields newer brokers add are ignored."""
    try:
        doc = _parse_json(_utf8(data, path))
    except ValueError as exc:
        raise ZkDataError(path, f"partition state is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ZkDataError(path, f"partition state must be a JSON object, got {_show(doc)}")
    isr = doc.get("isr")
    if not isinstance(isr, list) or not all(map(_is_int32, isr)):
        raise ZkDataError(path, "field 'isr' must be an array of ints")
    return PartitionState(
        _int_field(doc, "leader", path),
        _int_field(doc, "leader_epoch", path),
        tuple(isr),
        _int_field(doc, "controller_epoch", path),
        doc["version"] if _is_int32(doc.get("version")) else None,
    )
