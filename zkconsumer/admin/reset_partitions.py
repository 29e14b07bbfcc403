"""Which partitions an offset reset covers: the topics asked of each group, or every topic each group has."""

from __future__ import annotations

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.groups import group_topics
from zkconsumer.admin.log_offsets import Warn, log_warning
from zkconsumer.admin.offset_plan import WantedOffset, topic_layout
from zkconsumer.errors import AdminError, AdminUsageError
from zkconsumer.zookeeper import znodes

TopicSpec = tuple[str, list[int] | None]  # a topic, and its partitions (None: all of them)


@admin_errors
def reset_scope(
    client: KazooClient,
    groups: list[str],
    specs: list[TopicSpec] | None,
    all_groups: bool,
    *,
    warn: Warn = log_warning,
) -> list[WantedOffset]:
    """The partitions to reset: the `specs` of every group (with `all_groups`: of the groups that
    have them), or with `specs` None (--all-topics) each group's topics that exist. AdminUsageError
    for a topic asked for that does not exist, AdminError when nothing is left to reset."""
    mine = {g: group_topics(client, g) for g in groups}
    topics = {t for t, _ in specs} if specs is not None else set().union(*mine.values())
    layout = topic_layout(client, topics)
    if specs is not None:
        for topic, _ in specs:
            if layout[topic][1] is None:
                raise AdminUsageError(f"no such topic {topic!r} (no {znodes.topic_path(topic)}); nothing was written")
    wanted = []
    for group in groups:
        if specs is None:
            gone = sorted(t for t in mine[group] if layout[t][1] is None)
            if gone:
                warn(f"--all-topics: left out {', '.join(gone)} of group {group}: no such topic under /brokers/topics")
            chosen: list[TopicSpec] = [(t, None) for t in sorted(mine[group]) if t not in gone]
        else:
            chosen = [(t, ps) for t, ps in specs if not all_groups or t in mine[group]]
        for topic, partitions in chosen:
            for partition in partitions if partitions is not None else layout[topic][0]:
                wanted.append(WantedOffset(group, topic, partition))
    if not wanted:
        raise AdminError(
            "no partition to reset: "
            + ("no group has offsets of those topics" if specs else "the groups have no topics")
        )
    return wanted
