"""Pure decisions where Spark's checkpoint meets the group's ZooKeeper offsets: what may be committed, what disagrees, what a replay still reads."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zkconsumer.spark.offsets import Key, decode_epochs, decode_offsets


def canonical(offset: Mapping[str, Any]) -> str:
    """One text per offset value, however Spark or json formatted it (key order, spacing)."""
    return json.dumps(offset, sort_keys=True, separators=(",", ":"))


def own_entry(
    entries: Sequence[Mapping[str, Any] | None], known: Iterable[str]
) -> tuple[int, Mapping[str, Any]] | None:
    """The (source index, offset) of an offset-log line equal to an offset this source planned or
    was handed by Spark (`known`, canonical texts): that identifies our source among a query's
    several, and proves the checkpoint is this query's (another query's never has our offsets)."""
    wanted = set(known)
    for index, entry in enumerate(entries):
        if entry is not None and canonical(entry) in wanted:
            return index, entry
    return None


def forward_commits(
    end: Mapping[str, Any], owned: Mapping[Key, int], current_epochs: Mapping[str, int]
) -> dict[Key, int]:
    """The positions of a completed batch's `end` that may go to ZooKeeper: partitions still owned,
    moving forward from what the member holds, and counted in the topic incarnation owned now
    (a position of a deleted and re-created topic must not land in the new topic's node)."""
    recorded = decode_epochs(end)
    return {
        k: v
        for k, v in decode_offsets(end).items()
        if k in owned and v > owned[k] and recorded.get(k[0]) == current_epochs.get(k[0])
    }


def disagreements(checkpoint: Mapping[Key, int], zookeeper: Mapping[Key, int]) -> dict[Key, tuple[int, int]]:
    """key -> (checkpoint position, ZooKeeper offset, -1: none) where both cover the partition and differ."""
    return {k: (pos, zookeeper[k]) for k, pos in sorted(checkpoint.items()) if k in zookeeper and zookeeper[k] != pos}


def split_trailing(
    differ: Mapping[Key, tuple[int, int]], previous_end: Mapping[Key, int]
) -> tuple[dict[Key, tuple[int, int]], dict[Key, tuple[int, int]]]:
    """(trailing, unexplained): ZooKeeper at the end of the batch before the checkpoint's last one is
    the query's own last commit (it commits a batch once the next is planned, or at a graceful stop
    the last one the sink committed), not an outside change."""
    trailing = {k: v for k, v in differ.items() if previous_end.get(k) == v[1]}
    return trailing, {k: v for k, v in differ.items() if k not in trailing}


def describe(differ: Mapping[Key, tuple[int, int]]) -> str:
    """ "orders-0 checkpoint 120, ZooKeeper 0; orders-1 checkpoint 80, ZooKeeper none"."""
    return "; ".join(
        f"{t}-{p} checkpoint {pos}, ZooKeeper {zk if zk >= 0 else 'none'}"
        for (t, p), (pos, zk) in sorted(differ.items())
    )


@dataclass(frozen=True)
class Stale:
    """A topic whose recorded offsets belong to another incarnation (re-created) or to none (deleted)."""

    topic: str
    recorded: int
    current: int | None

    def describe(self) -> str:
        now = "deleted" if self.current is None else f"deleted and created again (incarnation {self.current})"
        return f"topic {self.topic} was {now} since the batch was planned in its incarnation {self.recorded}"


def split_stale(
    ranges: Sequence[tuple[Key, int, int]], recorded: Mapping[str, int], current: Mapping[str, int | None]
) -> tuple[list[tuple[Key, int, int]], list[Stale]]:
    """(ranges to read, topics whose ranges are dropped). A topic without a recorded incarnation
    (offsets written before they were recorded) or not looked up is trusted, as before."""
    stale = {
        t: Stale(t, recorded[t], current[t])
        for t in sorted({k[0] for k, _, _ in ranges})
        if t in recorded and t in current and current[t] != recorded[t]
    }
    return [r for r in ranges if r[0][0] not in stale], list(stale.values())
