"""Fire every child watch on a node without changing its children: create a child and delete it in one transaction."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError, RolledBackError
from kazoo.protocol.states import ZnodeStat

from zkconsumer.zookeeper.client import ZkIO


def nudge_children(io: ZkIO, parent: str, child: str, data: bytes) -> ZnodeStat:
    """Create `parent/child` (ephemeral, holding `data`) and delete it again, as one ZooKeeper
    transaction; the parent's stat read right after (its `pzxid` is the transaction's zxid unless
    another child changed since, and `cversion` grew by two).

    The server applies both operations at once: no read of any session ever sees the child, yet
    the create fires every child watch set on `parent` (ZooKeeper's DataTree triggers the watches
    of each operation of a multi, and a watch fires once, so the delete finds none left). The
    kazoo exception of the operation that failed is raised (NodeExistsError: `child` exists;
    NoNodeError: `parent` does not), and then nothing was written.

    Example::

        stat = nudge_children(io, "/consumers/billing/ids", "billing_nudge-1", registration_bytes)
    """
    path = f"{parent}/{child}"
    txn = io.client.transaction()
    txn.create(path, data, ephemeral=True)
    txn.delete(path)
    results = io.commit(txn, f"the nudge of {parent}")  # a refusal adds the child's path
    for result in results:
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            raise result
    stat = io.exists(parent)
    if stat is None:  # deleted right after our transaction: say which node
        raise NoNodeError(parent)
    return stat
