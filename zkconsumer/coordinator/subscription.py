"""Static and wildcard subscriptions: topic filters, thread ids, consumer ids and registrations."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from zkconsumer.config.compat import DEFAULT, Compat
from zkconsumer.zookeeper.kafkajson import coreutils_json_escape
from zkconsumer.zookeeper.znodes import Registration

STATIC, WHITE_LIST, BLACK_LIST = "static", "white_list", "black_list"
_LEGAL_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def validate_topic(topic: str) -> str:
    """Kafka's Topic.validate: 1..249 of [A-Za-z0-9._-], and not "." or ".."."""
    if not isinstance(topic, str) or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise ValueError(f"illegal topic name {topic!r}: use 1..249 of [A-Za-z0-9._-], not '.' or '..'")
    return topic


def _check_streams(what: str, count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2**31:
        raise ValueError(f"{what} must be an int >= 1, got {count!r}")


# ---------------------------------------------------------------- Java regex -> Python re

_POSIX = {  # \p{Name}: Java's ASCII-only POSIX classes, as set bodies
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_SIMPLE_ESCAPES = {  # Java escapes whose Python spelling differs (same meaning)
    "h": "[ \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000]",
    "H": "[^ \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000]",
    "v": "[\\n\\x0b\\f\\r\\x85\\u2028\\u2029]",
    "V": "[^\\n\\x0b\\f\\r\\x85\\u2028\\u2029]",
    "e": "\\x1b",
    "z": "\\Z",
    "Z": "(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?\\Z)",
    "R": "(?:\\r\\n|[\\n\\x0b\\f\\r\\x85\\u2028\\u2029])",
}
_SAME_ESCAPES = set("tnrfadDsSwWbBA0123456789xu")  # mean the same in both (with re.ASCII)


def _java_escape(regex: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape starting at regex[i] == '\\'; returns (python text, next index)."""
    if i + 1 >= len(regex):
        raise ValueError("trailing backslash")
    char = regex[i + 1]
    if char == "Q" and not in_class:  # \Q...\E quotes literally
        end = regex.find("\\E", i + 2)
        end = len(regex) if end < 0 else end
        return re.escape(regex[i + 2 : end]), end + 2
    if char in "pP":
        match = re.match(r"\{(\w+)\}", regex[i + 2 :])
        if not match or match[1] not in _POSIX or (char == "P" and in_class):
            raise ValueError(f"unsupported Java class \\{char}{regex[i + 2 : i + 12]}")
        body = _POSIX[match[1]]
        text = body if in_class else f"[{'^' if char == 'P' else ''}{body}]"
        return text, i + 2 + match.end()
    if char in _SIMPLE_ESCAPES and not (in_class and char in "zZRhHvV"):
        return _SIMPLE_ESCAPES[char], i + 2
    if char == "0":  # Java octal \0n..\0mnn; Python's \0 would be NUL
        match = re.match(r"[0-3]?[0-7]{1,2}", regex[i + 2 :])
        if not match:
            raise ValueError("illegal octal escape")
        return f"\\x{int(match[0], 8):02x}", i + 2 + match.end()
    if (char.isascii() and char.isalpha() and char not in _SAME_ESCAPES) or (in_class and char in "bBA123456789"):
        raise ValueError(f"unsupported escape \\{char}")
    return regex[i : i + 2], i + 2


def java_regex_to_python(regex: str) -> str:
    """Rewrite a java.util.regex pattern for Python's re (compile with re.ASCII, as Java's defaults are).

    Constructs Python would read differently, or that Java rejects, raise ValueError so a regex
    can never mean one thing to us and another to the Scala members of the group.
    """
    out, i, in_class = [], 0, False
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            text, i = _java_escape(regex, i, in_class)
            out.append(text)
            continue
        if in_class:
            if char == "[" or regex.startswith("&&", i):
                raise ValueError("nested character classes and '&&' intersections are Java-only")
            in_class = char != "]"
            out.append("\\" + char if char in "&~|" else char)  # literal in Java; Python may warn
        elif char == "[":
            in_class = True
            if regex.startswith("^", i + 1):
                out.append("[^")
                i += 1
            else:
                out.append("[")
            if regex.startswith("]", i + 1):
                raise ValueError("']' right after '[' is read differently by Java and Python")
        elif char == "(" and regex.startswith("(?", i):
            if re.match(r"\(\?(P|#|\(|<[^=!])", regex[i:]):
                if not re.match(r"\(\?<[A-Za-z][A-Za-z0-9]*>", regex[i:]):
                    raise ValueError(f"group syntax {regex[i : i + 4]!r} is not shared by Java and Python")
                out.append("(?P<")  # Java's named group
                i += 3
                continue
            flags = re.match(r"\(\?([a-zA-Z-]*)[:)]", regex[i:])
            if flags and (set(flags[1]) - set("ims-") or (flags[0].endswith(")") and i != 0)):
                raise ValueError(f"inline flags {flags[0]!r}: only i, m, s, and global ones only at the start")
            out.append(char)
        elif char == "{":
            match = re.match(r"\{[0-9]+(,[0-9]*)?\}", regex[i:])
            if not match:
                raise ValueError("'{' must start a {n}, {n,} or {n,m} repetition in Java")
            out.append(match[0])
            i += match.end()
            continue
        else:
            out.append(char)
        i += 1
    if in_class:
        raise ValueError("unclosed character class")
    return "".join(out)


# ---------------------------------------------------------------- topic filters (TopicFilter.scala)


def normalise_regex(raw_regex: str) -> str:
    """TopicFilter: trim, ',' -> '|', drop spaces, strip leading/trailing runs of quotes."""
    text = re.sub(r"\A[\x00- ]+|[\x00- ]+\Z", "", raw_regex)  # String.trim drops every char <= ' '
    text = text.replace(",", "|").replace(" ", "")
    text = re.sub(r"\A[\"']+", "", text)
    # Java's '$' also matches before one final line terminator, so quotes there go too.
    return re.sub(r"[\"']+(?=(?:\r\n|[\n\r\x85\u2028\u2029])?\Z)", "", text)


@dataclass(frozen=True)
class TopicFilter:
    """Base of Whitelist/Blacklist; `regex` is the normalised pattern Scala stores and matches."""

    raw_regex: str = field(compare=False)
    regex: str = field(init=False)
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    pattern: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if type(self) is TopicFilter:
            raise TypeError("use Whitelist or Blacklist")
        regex = normalise_regex(self.raw_regex)
        try:
            compiled = re.compile(java_regex_to_python(regex), re.ASCII)
        except (ValueError, re.error) as exc:
            raise ValueError(f"{regex} is an invalid regex ({exc})") from None
        object.__setattr__(self, "regex", regex)
        object.__setattr__(self, "_compiled", compiled)

    def is_topic_allowed(
        self, topic: str, *, exclude_internal: bool = True, internal_topics: tuple[str, ...] = DEFAULT.internal_topics
    ) -> bool:
        """Java String.matches (a full match), inverted for a blacklist; internal topics optionally dropped."""
        if exclude_internal and topic in internal_topics:
            return False
        matched = self._compiled.fullmatch(topic) is not None
        return not matched if self.pattern == BLACK_LIST else matched


@dataclass(frozen=True)
class Whitelist(TopicFilter):
    pattern: ClassVar[str] = WHITE_LIST


@dataclass(frozen=True)
class Blacklist(TopicFilter):
    pattern: ClassVar[str] = BLACK_LIST


# ---------------------------------------------------------------- subscriptions


@dataclass(frozen=True)
class StaticSubscription:
    """Explicit topics with a stream count each, in the order they are written to ZooKeeper."""

    topic_counts: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "topic_counts", tuple((t, n) for t, n in self.topic_counts))

    @classmethod
    def of(cls, topic_counts: Mapping[str, int]) -> StaticSubscription:
        """Validated constructor for our own subscriptions: legal topic names, counts >= 1."""
        for topic, count in topic_counts.items():
            _check_streams(f"stream count for {validate_topic(topic)!r}", count)
        if not topic_counts:
            raise ValueError("a static subscription needs at least one topic")
        return cls(tuple(topic_counts.items()))


@dataclass(frozen=True)
class WildcardSubscription:
    """Every topic the filter allows, each with the same number of streams."""

    topic_filter: TopicFilter
    num_streams: int


Subscription = StaticSubscription | WildcardSubscription


MAX_STREAMS = 100_000  # a peer claiming more would exhaust a Scala member's heap; refuse instead


def _thread_ids(consumer_id: str, topic: str, count: int) -> list[str]:
    if not 1 <= count <= MAX_STREAMS:  # TopicCount.makeConsumerThreadIdsPerTopic asserts count >= 1
        raise ValueError(f"stream count for {topic!r} is {count}; expected 1..{MAX_STREAMS}")
    return [f"{consumer_id}-{i}" for i in range(count)]


def thread_ids_for(
    consumer_id: str,
    subscription: Subscription,
    all_topics: Iterable[str],
    *,
    exclude_internal: bool = True,
    compat: Compat = DEFAULT,
) -> dict[str, list[str]]:
    """topic -> ["<cid>-0", ...]. Static ignores all_topics (Scala lists topics that do not exist yet)."""
    if isinstance(subscription, StaticSubscription):
        return {t: _thread_ids(consumer_id, t, n) for t, n in subscription.topic_counts}
    allowed = (
        t
        for t in dict.fromkeys(all_topics)
        if subscription.topic_filter.is_topic_allowed(
            t, exclude_internal=exclude_internal, internal_topics=compat.internal_topics
        )
    )
    return {t: _thread_ids(consumer_id, t, subscription.num_streams) for t in allowed}


def thread_sort_key(thread_id: str) -> bytes:
    """ConsumerThreadId.compare is String.compareTo: UTF-16 code-unit order (plain str order for ASCII)."""
    return thread_id.encode("utf-16-be", "surrogatepass")


# ---------------------------------------------------------------- registrations


def to_registration(subscription: Subscription, timestamp_ms: int, compat: Compat = DEFAULT) -> Registration:
    """The document registerConsumerInZK writes; the wildcard key is CoreUtils.JSONEscapeString(regex).

    `compat` is accepted for symmetry: the document is the same in every release, only its writer
    (see encode_registration) differs.
    """
    if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int):
        raise ValueError(f"timestamp_ms must be an int, got {timestamp_ms!r}")
    if isinstance(subscription, StaticSubscription):
        counts = dict(subscription.topic_counts)
        if len(counts) != len(subscription.topic_counts):
            raise ValueError(f"duplicate topics in {subscription!r}")
        pairs = StaticSubscription.of(counts).topic_counts
        if len(pairs) > 4:  # Scala's Map1..Map4 keep insertion order; bigger maps iterate in trie order
            pairs = tuple(sorted(pairs, key=lambda pair: _scala_trie_position(pair[0])))
        return Registration(pairs, STATIC, str(timestamp_ms))
    _check_streams("num_streams", subscription.num_streams)
    key = coreutils_json_escape(subscription.topic_filter.regex)
    return Registration(((key, subscription.num_streams),), subscription.topic_filter.pattern, str(timestamp_ms))


def encode_registration(subscription: Subscription, timestamp_ms: int, compat: Compat = DEFAULT) -> bytes:
    """Registration bytes every legacy reader decodes to the subscription we mean.

    Static subscriptions come out byte-identical for every release. For wildcards, Scala
    1.0.1+ lets Jackson escape the already JSON-escaped regex again (KAFKA-6319), so its own
    readers see every backslash doubled and the filter stops matching; we write the
    single-escaped form of 0.8.2-1.0.0, which all releases read back as the intended regex.
    """
    return to_registration(subscription, timestamp_ms, compat).encode(jackson=False)


def _scala_trie_position(key: str) -> tuple[int, ...]:
    # Where scala.collection.immutable.HashMap (2.10-2.12) files a String key: improve(hashCode),
    # then 5 bits per trie level from the least significant end; iteration follows that order.
    mask, h = 0xFFFFFFFF, 0
    units = key.encode("utf-16-be", "surrogatepass")  # String.hashCode runs over UTF-16 code units
    for j in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[j : j + 2], "big")) & mask
    h = (h + (~(h << 9) & mask)) & mask
    h ^= h >> 14
    h = (h + (h << 4)) & mask
    h ^= h >> 10
    return tuple((h >> shift) & 31 for shift in range(0, 32, 5))


def scala_map_head(pairs: tuple[tuple[str, int], ...]) -> tuple[str, int]:
    """Map.head of the Scala immutable Map a reader builds: insertion order up to 4 keys, hash order above."""
    if len(pairs) <= 4:
        return pairs[0]
    return min(pairs, key=lambda pair: _scala_trie_position(pair[0]))  # min is stable on ties


def from_registration(registration: Registration, *, compat: Compat = DEFAULT) -> Subscription:
    """What TopicCount.constructTopicCount makes of a member's registration (same in every release).

    white_list/black_list with a non-empty map -> wildcard on the map's head (whose key is
    normalised again); anything else -> static. An invalid regex raises ValueError, as Scala throws.
    """
    if registration.pattern in (WHITE_LIST, BLACK_LIST) and registration.subscription:
        regex, num_streams = scala_map_head(registration.subscription)
        kind = Whitelist if registration.pattern == WHITE_LIST else Blacklist
        return WildcardSubscription(kind(regex), num_streams)
    return StaticSubscription(registration.subscription)


def make_consumer_id(
    group_id: str, consumer_id: str | None = None, *, hostname: str, now_ms: int, uuid_int: int
) -> str:
    """group + "_" + (consumer.id, or "<host>-<ms>-<first 8 hex of Long.toHexString(uuid MSB)>").

    An explicitly empty consumer.id is used as is (Scala's Option("") is Some("")). Long.toHexString
    is unsigned, so the unsigned upper 64 bits of the 128-bit UUID give the same digits.
    """
    if consumer_id is not None:
        return f"{group_id}_{consumer_id}"
    if not 0 <= uuid_int < 2**128:
        raise ValueError(f"uuid_int must be a 128-bit unsigned int, got {uuid_int!r}")
    return f"{group_id}_{hostname}-{now_ms}-{format(uuid_int >> 64, 'x')[:8]}"
