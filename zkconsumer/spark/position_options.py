"""Option values that name positions: offsets and timestamps per partition (Spark's JSON or ours), pinned partitions.

Pure parsers: each raises ValueError naming the option and the value; options.parse_options turns
that into its OptionError."""

from __future__ import annotations

import json

from zkconsumer.spark.offsets import EARLIEST, Key, parse_key


def explicit_offsets(doc: object) -> dict[Key, int] | None:
    """Offsets JSON in either shape, ours {"topic/0": 42} or Spark's {"topic": {"0": 42}} (both may be
    mixed in one object) -> {(topic, partition): offset}; None if it is neither. A partition given
    twice (once in each shape) must have one offset."""
    if not isinstance(doc, dict):
        return None
    out: dict[Key, int] = {}
    try:
        for name, value in doc.items():
            if isinstance(value, dict):  # Spark's shape: topic -> {"partition": offset}
                entries = [((str(name), _partition(p)), v) for p, v in value.items()]
            else:
                entries = [(parse_key(str(name)), value)]
            for k, v in entries:
                if isinstance(v, bool) or not isinstance(v, int) or out.setdefault(k, v) != v:
                    return None
    except ValueError:
        return None
    return out


def _partition(text: object) -> int:
    if not isinstance(text, str) or not text.isdigit():
        raise ValueError(f"bad partition {text!r}")
    return int(text)


def position_spec(raw: str | None, key: str, default: str) -> tuple[str, dict[Key, int]]:
    """earliest | latest | JSON {"topic/partition": offset} or {"topic": {"partition": offset}}
    -> (fallback, explicit offsets)."""
    text = (raw if raw is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower(), {}
    try:
        explicit = explicit_offsets(json.loads(text))
    except ValueError:
        explicit = None
    if explicit is None or any(v < EARLIEST for v in explicit.values()):
        raise ValueError(
            f'option {key!r} must be earliest, latest or a JSON object like {{"topic/0": 42}} or '
            f'{{"topic": {{"0": 42}}}} (-2 earliest, -1 latest), not {text!r}'
        )
    return default, explicit


def partition_times(raw: str | None, key: str) -> dict[Key, int]:
    """Spark's {"topic": {"partition": timestamp ms}} (or ours, {"topic/partition": ms}) -> {key: ms}."""
    if raw is None:
        return {}
    try:
        times = explicit_offsets(json.loads(raw))
    except ValueError:
        times = None
    if times is None or not times or any(v < 0 for v in times.values()):
        raise ValueError(
            f'option {key!r} must be a JSON object like {{"topic": {{"0": 1700000000000}}}} of timestamps '
            f"(ms since the epoch, >= 0), not {raw!r}"
        )
    return times


def pinned_partitions(raw: str) -> frozenset[Key]:
    """ "orders/0,orders/3" -> {("orders", 0), ("orders", 3)}: a batch read of exactly these partitions
    (the ingest job pins its plan with it, so a partition added meanwhile is not read unrecorded)."""
    keys = set()
    for item in (i.strip() for i in raw.split(",") if i.strip()):
        topic, slash, number = item.rpartition("/")
        if not slash or not topic or not number.isdigit():
            raise ValueError(f"option 'partitions': {item!r} is not topic/partition (e.g. orders/3)")
        keys.add((topic, int(number)))
    if not keys:
        raise ValueError("option 'partitions' names no partition")
    return frozenset(keys)
