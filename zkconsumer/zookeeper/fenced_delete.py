"""The group delete's transaction: deletes fenced on the group's ids/ node, which ZooKeeper refuses to delete while a member is registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError, RolledBackError, RuntimeInconsistency

from zkconsumer.errors import ZkConsumerError
from zkconsumer.zookeeper import znodes

if TYPE_CHECKING:
    from kazoo.security import ACL

__all__ = ["IdsNode", "MemberJoined", "commit_deletes", "read_ids"]


class MemberJoined(ZkConsumerError):
    """A transaction's fence failed or a node appeared: look whether a member registered."""


@dataclass(frozen=True)
class IdsNode:
    """ids/ as found before the deletes: recreated with its data and ACL between transactions."""

    path: str
    exists: bool
    data: bytes = b""
    acl: tuple[ACL, ...] = ()


def read_ids(client: KazooClient, group: str) -> IdsNode:
    """ids/ of the group as it is now (its data and ACL), to recreate between transactions."""
    path = znodes.ids_path(group)
    try:
        data, _ = client.get(path)
        acl, _ = client.get_acls(path)
    except NoNodeError:
        return IdsNode(path, False)
    return IdsNode(path, True, data or b"", tuple(acl))


def commit_deletes(client: KazooClient, ids: IdsNode, paths: list[str], *, final: bool) -> None:
    """Delete `paths` in one transaction fenced on ids/ (deleted and, unless `final`, created again as
    it was); MemberJoined if the fence failed or a node appeared meanwhile, nothing deleted."""
    txn = client.transaction()
    if ids.exists:
        txn.delete(ids.path)  # fails while a member is registered
        if not final:
            txn.create(ids.path, ids.data, acl=list(ids.acl) or None)
    else:
        txn.create(ids.path, b"")  # fails if a member created ids/ meanwhile
        txn.delete(ids.path)
    for path in paths:
        txn.delete(path)
    results = txn.commit()
    failures = [r for r in results if isinstance(r, Exception)]
    if not failures:
        return
    if any(isinstance(r, (NotEmptyError, NodeExistsError, NoNodeError)) for r in failures):
        raise MemberJoined()
    raise next((r for r in failures if not isinstance(r, (RolledBackError, RuntimeInconsistency))), failures[0])
