"""The groups under /consumers: list them, count a group's registered members, tell whether one exists."""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient

from zkconsumer.admin.public_errors import admin_errors
from zkconsumer.errors import AdminUsageError
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
    return len(children(client, _checked(znodes.ids_path, group)))


@admin_errors
def group_exists(client: KazooClient, group: str) -> bool:
    """Whether /consumers/<group> exists (AdminUsageError for a name that is no valid group)."""
    return exists(client, _checked(znodes.group_path, group)) is not None


def _checked(path_of: Callable[[str], str], group: str) -> str:
    try:
        return path_of(group)
    except ValueError:
        raise AdminUsageError(f"invalid group name {group!r}") from None
