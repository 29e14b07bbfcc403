"""Byte-exact codecs of the brokers' znodes: /brokers/ids registrations, /brokers/topics partition maps, partition state."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zkconsumer.config.checks import SECURITY_PROTOCOLS
from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper.kafkajson import (
    _INT32,
    _int_field,
    _is_int32,
    _jackson_quote,
    _number,
    _parse_java_integer,
    _parse_json,
    _parse_json_lenient,
    _show,
    _to_bytes,
    _utf8,
)

# ---------------------------------------------------------------- /brokers/ids/<id> (BrokerIdZNode.decode, 1.1.1)

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


# Brokers before 0.10 answer no ApiVersions request (a 0.9 broker drops the connection; KIP-35), so a
# librdkafka client must be told the protocol they speak. Registration v1 is written only by 0.8.x,
# v2 only by 0.9.0.x; from v3 (0.10.0) librdkafka asks the broker itself.
_PRE_API_VERSIONS = {1: "0.8.2.2", 2: "0.9.0.1"}


def client_settings(brokers: Iterable[BrokerInfo]) -> dict[str, str]:
    """The librdkafka settings a client of these brokers needs: with a pre-0.10 broker among them,
    api.version.request=false and broker.version.fallback naming the oldest; else none."""
    versions = [b.version for b in brokers if b.version in _PRE_API_VERSIONS]
    if not versions:
        return {}
    return {"api.version.request": "false", "broker.version.fallback": _PRE_API_VERSIONS[min(versions)]}


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
class LeaderAndIsr:
    """A partition's /brokers/topics/<t>/partitions/<p>/state node: its leader and in-sync replicas,
    as the controller last wrote them (Kafka's LeaderIsrAndControllerEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    version: int | None


def decode_partition_state(data: bytes, path: str) -> LeaderAndIsr:
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
    return LeaderAndIsr(
        _int_field(doc, "leader", path),
        _int_field(doc, "leader_epoch", path),
        tuple(isr),
        _int_field(doc, "controller_epoch", path),
        doc["version"] if _is_int32(doc.get("version")) else None,
    )
