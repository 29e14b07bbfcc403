"""Reading a group's committed offsets out: as ExportZkOffsets exports them, or as Spark's startingOffsets."""

from __future__ import annotations

import json
from collections.abc import Iterable

from kazoo.client import KazooClient

from zkconsumer.admin.committed import read_offsets
from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.groups import group_topics
from zkconsumer.admin.log_offsets import Warn, log_warning
from zkconsumer.admin.offset_files import OffsetEntry
from zkconsumer.admin.offsets_write import Progress, no_progress
from zkconsumer.admin.snapshot import read_partitions
from zkconsumer.errors import AdminError
from zkconsumer.migration import spark_starting_offsets
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children


@admin_errors
def spark_starting_offsets_of(
    client: KazooClient, group: str, topics: list[str] | None, *, warn: Warn = log_warning
) -> tuple[str, list[tuple[str, str]]]:
    """Spark's startingOffsets JSON of the group's position in its topics (or `topics`), and the
    offset nodes that could not be read (path, why). AdminError for a topic asked for that has no
    partitions; a partition with no valid offset gets -2 (earliest), warned of."""
    wanted = topics or sorted(group_topics(client, group))
    found = read_offsets(client, group, wanted)
    partitions = read_partitions(client, wanted)
    for topic in [t for t in wanted if not partitions.get(t)]:
        if topics is not None:
            raise AdminError(f"no such topic {topic!r} (no partitions under /brokers/topics/{topic})")
        warn(f"left out topic {topic}: it has no partitions under /brokers/topics (deleted?)")
    doc, missing = spark_starting_offsets({t: ps for t, ps in partitions.items() if ps}, found.valid)
    if missing:
        warn(
            f"no valid committed offset of group {group} for "
            + ", ".join(f"{t}-{p}" for t, p in missing)
            + ": -2 (earliest) in startingOffsets"
        )
    bad = [(znodes.offset_path(group, *k), r) for k, r in sorted(found.garbled.items())]
    return json.dumps(doc, sort_keys=True) + "\n", bad


@admin_errors
def read_export(
    client: KazooClient,
    groups: Iterable[str],
    only: set[str] | None = None,
    *,
    progress: Progress = no_progress,
    warn: Warn = log_warning,
) -> tuple[list[OffsetEntry], list[tuple[str, str]]]:
    """Every valid committed offset of the groups (of the topics in `only`), as ExportZkOffsets
    exports them, and the offset nodes that could not be read (path, why). An offset older than its
    topic is left out, warned of: importing it later would make it current again."""
    topics = {g: [t for t in children(client, znodes.offsets_path(g)) if only is None or t in only] for g in groups}
    total = sum(len(children(client, znodes.offsets_path(g, t))) for g, ts in topics.items() for t in ts)
    entries, bad = [], []
    with progress(total, "exporting offsets") as bar:
        for group, group_topics in topics.items():
            found = read_offsets(client, group, group_topics)
            entries += [OffsetEntry(group, t, p, o) for (t, p), o in found.valid.items()]
            bad += [(znodes.offset_path(group, *k), r) for k, r in found.garbled.items()]
            for key in sorted(found.stale):
                warn(f"not exported {znodes.offset_path(group, *key)}: {found.stale_note(key)}")
            bar.advance(len(found.valid) + len(found.garbled) + len(found.stale))
    return sorted(entries), bad
