"""The owner-fenced offset write: one transaction that fails as a whole if the partition has an owner node."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NodeExistsError, NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE

from zkconsumer.zookeeper import znodes

__all__ = ["ANY_VERSION", "PLACEHOLDER", "AnyVersion", "write_offset_guarded"]

# Data of the placeholder owner node a guarded write creates and deletes in the same transaction.
PLACEHOLDER = b"zkconsumer-cli-offset-writer"


class AnyVersion:
    """`expect_version` of write_offset_guarded: write whatever the offset node holds now."""


ANY_VERSION = AnyVersion()


def write_offset_guarded(
    client: KazooClient,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    expect_version: int | None | AnyVersion = ANY_VERSION,
    topic_epoch: int | None = None,
) -> str | None:
    """Write one offset node unless the partition has an owner node; returns None or why it refused.

    One ZooKeeper transaction creates a placeholder owner node, writes the offset and deletes the
    placeholder: it fails as a whole if a real owner node exists, so the check and the write cannot
    be separated by a member claiming the partition in between.

    `expect_version`, for a write planned from an earlier read: the offset node's version then
    (None: there was none). The transaction then also checks it, so a member that committed
    between the read and the write (and left again) keeps its offset: the write refuses.
    `topic_epoch`: the topic's incarnation (czxid of /brokers/topics/<topic>) the offset counts in.
    A topic deleted and created again since is refused before the write; one re-created while the
    write was on its way has the write withdrawn after it (ZooKeeper cannot check a czxid inside a
    transaction), so an old log's offset never lands in the new topic's offset node.
    """
    owner = znodes.owner_path(group, topic, partition)
    path = znodes.offset_path(group, topic, partition)
    data = znodes.encode_offset(offset)
    if topic_epoch is not None and (moved := _topic_moved(client, topic, topic_epoch)):
        return moved
    # The group node stays open, as a secured Scala member leaves it (other identities register
    # under it); owners/ and offsets/ below get the session's default ACL (secured with --zk-jaas).
    client.ensure_path(znodes.group_path(group), acl=OPEN_ACL_UNSAFE)
    client.ensure_path(znodes.owners_path(group, topic))
    client.ensure_path(znodes.offsets_path(group, topic))
    for _ in range(5):
        txn = client.transaction()
        txn.create(owner, PLACEHOLDER, ephemeral=True)
        if isinstance(expect_version, AnyVersion):
            exists = client.exists(path) is not None
        else:
            exists = expect_version is not None
            if exists:
                txn.check(path, expect_version)
        if exists:
            txn.set_data(path, data)
        else:
            txn.create(path, data)
        txn.delete(owner)
        results = txn.commit()
        if not any(isinstance(r, Exception) for r in results):
            if topic_epoch is not None and (moved := _topic_moved(client, topic, topic_epoch)):
                return moved + _withdraw(client, path, data)
            return None
        if any(isinstance(r, NoAuthError) for r in results):  # an ACL, not a race: retrying cannot help
            where = owner if isinstance(results[0], NoAuthError) else path
            return (
                f"ZooKeeper refused the write to {where} (NoAuth); pass --zk-jaas FILE (SASL, as the "
                "group's Scala members log in) or --zk-digest user:password"
            )
        if isinstance(results[0], NodeExistsError):
            try:
                holder, stat = client.get(owner)
            except NoNodeError:
                continue  # released meanwhile: try again
            return (
                f"owned by {holder.decode('utf-8', 'replace')} (session 0x{stat.ephemeralOwner:x}); "
                "stop that member (or let its session expire) first"
            )
        if not isinstance(expect_version, AnyVersion):
            return _changed_since_planned(client, path, expect_version)
        # The offset node appeared or vanished between exists() and the transaction: decide again.
    return f"{path} kept changing under the write"


def _topic_moved(client: KazooClient, topic: str, epoch: int) -> str | None:
    """Why an offset counted in incarnation `epoch` must not be written now, if the topic's node is
    gone or is another incarnation."""
    stat = client.exists(znodes.topic_path(topic))
    if stat is None:
        return f"topic {topic} was deleted since the offsets were counted (incarnation {epoch})"
    if stat.czxid != epoch:
        return (
            f"topic {topic} was deleted and created again since the offsets were counted (incarnation "
            f"{epoch}, now {stat.czxid}): an old log's offset must not land in the new topic"
        )
    return None


def _withdraw(client: KazooClient, path: str, data: bytes) -> str:
    """Delete the offset node just written if it still holds `data` (nobody wrote it since)."""
    try:
        current, stat = client.get(path)
        if current != data:
            return f"; {path} was written again since, and is left as it is"
        client.delete(path, version=stat.version)
    except NoNodeError:
        return ""
    except Exception as exc:  # noqa: BLE001 - reported: an operator must look at it
        return f"; withdrawing what was written failed ({exc}): {path} holds an old log's offset"
    return "; what was written is withdrawn"


def _changed_since_planned(client: KazooClient, path: str, expected: int | None) -> str:
    """The refusal of a compare-and-set whose offset node is not as it was when planned."""
    try:
        current, stat = client.get(path)
    except NoNodeError:
        return f"{path} was deleted since it was read (version {expected}): not writing over a change"
    return (
        f"{path} changed since it was read ({'no node' if expected is None else f'version {expected}'}, now "
        f"{current.decode('utf-8', 'replace')} at version {stat.version}): a member committed meanwhile; "
        "not overwriting its offset"
    )
