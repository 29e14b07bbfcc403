"""The groups under /consumers: list them, count a group's registered members, tell whether one exists, name its topics."""

from __future__ import annotations

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children, exists


@admin_errors
def list_groups(client: KazooClient) -> list[str]:
    """Every group with a node under /consumers, sorted (a group stays after its members are gone)."""
    return sorted(children(client, znodes.CONSUMERS))


@admin_errors
def member_count(client: KazooClient, group: str) -> int:
    """How many members are registered under the group's ids/ (0 for an unknown group; AdminUsageError
    for a name that is no valid group)."""
    return len(children(client, znodes.ids_path(group)))


@admin_errors
def group_exists(client: KazooClient, group: str) -> bool:
    """Whether /consumers/<group> exists (AdminUsageError for a name that is no valid group)."""
    return exists(client, znodes.group_path(group)) is not None


def group_topics(client: KazooClient, group: str) -> set[str]:
    """The topics a group has offsets or owners of."""
    return set(children(client, znodes.offsets_path(group))) | set(children(client, znodes.owners_path(group)))
