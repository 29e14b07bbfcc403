"""Group delete: an inactive group's nodes, in transactions that fail as a whole if a member registers meanwhile.

A member registers by creating /consumers/<group>/ids/<consumer-id>; ZooKeeper cannot compare a
node's children in a transaction, but it refuses to delete a node that has any. So every
transaction starts by deleting ids/ (and, unless it is the group's last one, creating it again as
it was): with a member registered, that delete fails and nothing of the transaction happens. If
ids/ does not exist, the transaction creates and deletes it instead, which fails if a member made
it meanwhile. A large group takes several transactions; a member that registers between two of
them stops the rest, and what was deleted before it registered stays deleted.
"""

from __future__ import annotations

from collections.abc import Iterator

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.errors import DeleteRefused
from zkconsumer.zookeeper import transactions, znodes
from zkconsumer.zookeeper.fenced_delete import MemberJoined, commit_deletes, read_ids
from zkconsumer.zookeeper.reads import children, exists

# A delete inside a multi besides its path: op header, length prefix and version (generous).
DELETE_OVERHEAD = 64
BUDGET = 0xFFFFF // 2  # half of the server's default jute.maxbuffer, as the core's claims use
ATTEMPTS = 3


@admin_errors
def delete_fenced(client: KazooClient, group: str, roots: list[str]) -> list[str]:
    """Delete every root (the group node, or a topic's owners/ and offsets/ folders) with all below
    it; returns the roots that existed. DeleteRefused naming the member if one registers meanwhile
    (its nodes are left as they are)."""
    deleted_batches = 0
    for _ in range(ATTEMPTS):
        ids = read_ids(client, group)
        _stop_if_members(client, group, deleted_batches)
        found = [r for r in roots if exists(client, r) is not None]
        if not found:
            return []
        nodes = [path for root in found for path in _post_order(client, root, skip=ids.path)]
        whole_group = znodes.group_path(group) in found
        try:
            for batch, last in _batches(nodes):
                commit_deletes(client, ids, batch, final=last and whole_group)
                deleted_batches += 1
            return found
        except MemberJoined:
            continue  # a member, or only a node that appeared: look again
    _stop_if_members(client, group, deleted_batches)
    raise DeleteRefused(f"could not delete {', '.join(roots)}: nodes keep appearing under it (a consumer joining?)")


@admin_errors
def paths_to_delete(client: KazooClient, group: str, topic: str | None) -> list[str]:
    """The roots a delete of `group` (or of its `topic` only) removes: the group node when the topic
    is its only one under owners/; DeleteRefused when the group has nothing of the topic."""
    if topic is None or children(client, znodes.owners_path(group)) == [topic]:
        return [znodes.group_path(group)]
    paths = [znodes.owners_path(group, topic), znodes.offsets_path(group, topic)]
    if not any(exists(client, p) for p in paths):
        raise DeleteRefused(f"group {group!r} has no information for topic {topic!r}")
    return paths


@admin_errors
def has_topic_offsets(client: KazooClient, group: str, topic: str) -> bool:
    """Whether the group has an offsets/<topic> folder."""
    return exists(client, znodes.offsets_path(group, topic)) is not None


def _stop_if_members(client: KazooClient, group: str, deleted_batches: int) -> None:
    ingests = sorted(children(client, znodes.ingest_locks_path(group)))
    if ingests:  # not a member, but it commits the offsets a delete would remove
        raise DeleteRefused(
            f"Delete for group '{group}' stopped: a Spark ingest job runs for topic {', '.join(ingests)} "
            f"(lock under {znodes.ingest_locks_path(group)}); let it finish first."
            + ("" if not deleted_batches else f" {deleted_batches} transaction(s) of the delete went through.")
        )
    members = sorted(children(client, znodes.ids_path(group)))
    if not members:
        return
    done = (
        " Nothing was deleted."
        if not deleted_batches
        else f" {deleted_batches} earlier transaction(s) of the delete had gone through before it registered."
    )
    raise DeleteRefused(
        f"Delete for group '{group}' stopped: consumer {', '.join(members)} registered under "
        f"{znodes.ids_path(group)} while the group was being deleted; its nodes were left in place." + done
    )


def _post_order(client: KazooClient, root: str, *, skip: str) -> Iterator[str]:
    """root and every node below it, children before their parent, leaving out `skip` (ids/)."""
    for child in sorted(children(client, root)):
        path = f"{root}/{child}"
        if path != skip:
            yield from _post_order(client, path, skip=skip)
    yield root


def _batches(nodes: list[str]) -> Iterator[tuple[list[str], bool]]:
    groups = list(transactions.batches(((p, DELETE_OVERHEAD + len(p.encode())) for p in nodes), BUDGET)) or [[]]
    for index, batch in enumerate(groups):
        yield batch, index == len(groups) - 1
