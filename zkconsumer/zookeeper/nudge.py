"""Fire every child watch on a node without changing its children: create a child and delete it in one transaction."""

from __future__ import annotations

import random
import time

from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError, RolledBackError
from kazoo.protocol.states import ZnodeStat

from zkconsumer.errors import ZkConsumerError, ZooKeeperUnavailable
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.znodes import Registration

TRIGGER_PREFIX = "zkconsumer-rebalance"  # after "<group>_": a consumer id no Scala member generates


def trigger_child(group: str, now_ms: int, nonce: int) -> str:
    """The name of the nudge's child: "<group>_zkconsumer-rebalance-<ms>-<nonce>" (a consumer id)."""
    return f"{group}_{TRIGGER_PREFIX}-{now_ms}-{nonce:06d}"


def trigger_data(now_ms: int) -> bytes:
    """A registration with no subscription: {"version":1,"subscription":{},"pattern":"static","timestamp":"<ms>"}."""
    return Registration((), "static", str(now_ms)).encode()


class NudgeOutcomeUnknown(ZkConsumerError):
    """The connection dropped before the nudge's answer, and members came or went meanwhile:
    nothing tells whether the server applied it."""


def nudge_group(io: ZkIO, group: str) -> tuple[str, ZnodeStat]:
    """Make every member of `group` rebalance, Scala members that gave up included: `nudge_children`
    of its ids folder with a trigger child (another nonce when a name is taken by chance). Returns
    the child's path and the folder's stat; NodeExistsError after three names in a row were taken.

    Run once even when the connection drops before the answer: the ids folder read again says
    whether the server applied it (`nudge_outcome`), so a caller that retries never rebalances the
    group twice; NudgeOutcomeUnknown when that cannot be told."""
    parent = znodes.ids_path(group)
    before = _ids_version(io, parent)
    for attempt in range(3):
        now_ms = int(time.time() * 1000)
        child = trigger_child(group, now_ms, random.randrange(1_000_000))
        try:
            return f"{parent}/{child}", nudge_children(io, parent, child, trigger_data(now_ms))
        except NodeExistsError:
            if attempt == 2:
                raise
        except (ConnectionLoss, ZooKeeperUnavailable) as exc:
            after = _ids_version(io, parent, retry_until=time.monotonic() + io.timeout_s)
            outcome = nudge_outcome(before, after)
            if outcome == "applied":
                stat = io.exists(parent)
                if stat is not None:
                    return f"{parent}/{child}", stat
            if outcome == "unknown":
                raise NudgeOutcomeUnknown(
                    f"the connection dropped during the nudge of {parent} ({type(exc).__name__}) and members "
                    "came or went meanwhile: whether it was applied is unknown"
                ) from None
            before = after
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def nudge_outcome(before: tuple[int, list[str]], after: tuple[int, list[str]]) -> str:
    """Whether a nudge whose answer was lost (the connection dropped) was applied, from the ids
    folder's (cversion, children) read before it and after: "applied" (its create and delete, two
    child changes, the children as before), "not applied" (no child change at all), or "unknown"
    (members came or went meanwhile: nothing tells the nudge's changes from theirs)."""
    (version_before, children_before), (version_after, children_after) = before, after
    if version_after == version_before and children_after == children_before:
        return "not applied"
    if version_after == version_before + 2 and children_after == children_before:
        return "applied"
    return "unknown"


def _ids_version(io: ZkIO, parent: str, retry_until: float | None = None) -> tuple[int, list[str]]:
    """(cversion, sorted children) of the ids folder; after a dropped connection, tried again
    until `retry_until` while the client reconnects."""
    while True:
        try:
            stat = io.exists(parent)
            if stat is None:
                raise NoNodeError(parent)
            return stat.cversion, sorted(io.children(parent))
        except (ConnectionLoss, ZooKeeperUnavailable):
            if retry_until is None or time.monotonic() >= retry_until:
                raise
            time.sleep(0.2)


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
