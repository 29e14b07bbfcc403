"""ZooKeeper paths of the legacy consumer and byte-exact codecs of its own znodes (the brokers' ones: cluster/broker_nodes.py)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper.kafkajson import (
    _INT32,
    _INT64,
    _check_int,
    _is_int32,
    _jackson_quote,
    _number,
    _parse_java_integer,
    _parse_json_lenient,
    _raw_quote,
    _show,
    _to_bytes,
    _utf8,
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


def zkconsumer_sessions_path(group: str) -> str:
    """Where zkconsumer members keep their session fences (fence.py): one ephemeral sequential node
    per registration, a path no other session can ever hold."""
    return f"{group_path(group)}/zkconsumer/sessions"


def session_fence_prefix(group: str, consumer_id: str) -> str:
    """A fence node's path before ZooKeeper appends its sequence number."""
    return f"{zkconsumer_sessions_path(group)}/{_segment('consumer id', consumer_id)}-"


def encode_zkconsumer_marker(library_version: str, switch: str = "") -> bytes:
    """The marker's data: which library wrote the member's registration (for operators and tools) and,
    from a member that follows the live switch, `switch`: that field's JSON object (docs/live-switch.md)."""
    tail = f',"switch":{switch}' if switch else ""
    return _to_bytes(
        f'{{"version":1,"library":"zkconsumer","library_version":{_jackson_quote(library_version)}{tail}}}'
    )


def switch_path(group: str) -> str:
    """The live switch's node (docs/live-switch.md): which coordination step the group is at; none means `zookeeper`."""
    return f"{group_path(group)}/zkconsumer/switch"


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


@functools.lru_cache(maxsize=65536)  # the watchdog asks once per partition, of a few distinct ids
def consumer_id_of_thread(thread_id: str) -> str:
    """ "g_host-1-abc-12" -> "g_host-1-abc": the owner's consumer id, as the ops tools recover it."""
    consumer_id, dash, number = thread_id.rpartition("-")
    if not dash or not consumer_id or not re.fullmatch(r"[0-9]+", number):
        raise ValueError(f"not a <consumerId>-<n> thread id: {thread_id!r}")
    return consumer_id


def encode_offset(offset: int) -> bytes:
    """Long.toString: plain decimal, no padding, no newline."""
    return str(_check_int(offset, "offset", _INT64)).encode("ascii")


def decode_offset(data: bytes, path: str) -> int:
    """StringOps.toLong, so " 5", "5\\n" and "" fail while "+5" and "007" pass."""
    text = _utf8(data, path)
    value = _parse_java_integer(text, _INT64)
    if value is None:
        raise ZkDataError(path, f"offset {text[:40]!r} is not a 64-bit decimal integer")
    return value
