"""Option values of the commands, pure: topic[:partitions] specs, partition lists, key=value pairs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from zkconsumer.admin import InputError
from zkconsumer.zookeeper import znodes


def parse_partitions(text: str) -> list[int]:
    """ "0,3,5-7" -> [0, 3, 5, 6, 7]."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not match:
            raise InputError(f"bad partition list {text!r}: use numbers and ranges like 0,3,5-7")
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low or high - low > 100_000:
            raise InputError(f"bad partition range {part!r}")
        out.update(range(low, high + 1))
    return sorted(out)


def parse_topic_specs(values: Sequence[str]) -> list[tuple[str, list[int] | None]]:
    """--topic values as kafka-consumer-groups and ConsumerOffsetChecker take them: `a`, `a,b` (several
    topics), `a:0,1` or `a:0-3` (partitions of a). After `a:`, a piece of digits is a partition of a;
    any other piece starts the next topic. The same topic twice merges its partitions (None: all)."""
    specs: dict[str, list[int] | None] = {}
    for value in values:
        current: str | None = None
        for piece in (p.strip() for p in value.split(",")):
            if current is not None and re.fullmatch(r"[0-9]+(?:-[0-9]+)?", piece):
                _add(specs, current, parse_partitions(piece))
                continue
            topic, colon, partitions = piece.partition(":")
            try:
                znodes.topic_path(topic)
            except ValueError:
                raise InputError(f"invalid topic name {topic!r} in --topic {value!r}") from None
            if colon:
                _add(specs, topic, parse_partitions(partitions))
                current = topic
            else:
                _add(specs, topic, None)
                current = None
    return list(specs.items())


def _add(specs: dict[str, list[int] | None], topic: str, partitions: list[int] | None) -> None:
    if partitions is None or (topic in specs and specs[topic] is None):
        specs[topic] = None
    else:
        specs[topic] = sorted(set(specs.get(topic) or []) | set(partitions))


def parse_key_value(text: str, what: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise InputError(f"bad {what} {text!r}: expected key=value")
    return key.strip(), value
