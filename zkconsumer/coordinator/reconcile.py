"""Owned partitions we can no longer vouch for (Membership.on_doubt stopped their delivery): a rebalance's reconcile step releases, drops or restarts them."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from zkconsumer.consumer.fetcher import PartitionFetcher
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.partitions import partitions_text
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(
    "zkconsumer.coordinator.rebalancer"
)  # the rebalancer's logger: these lines are the rebalancer's


def reconcile_owned(
    assignment: Assignment,
    group: GroupZk,
    fetcher: PartitionFetcher | None,
    topic_epochs: Mapping[str, int | None],
    consumer_id: str,
) -> None:
    """Resolve owned partitions we can no longer vouch for before planning.

    Another incarnation of the topic (deleted, maybe created again): released without a commit,
    then claimed afresh so offsets are read again. Owner node gone or another session's (deleted
    by a tool or a Scala member acting on a stale registry): forgotten, claimed again. Owner node
    of our session rewritten by hand, or in doubt (a watch or a commit said so; delivery already
    stopped) but read again as ours: released (committed while the node is ours, deleted: only our
    session can) and claimed again, since what the iterators dropped meanwhile must be fetched again.
    Not fetched although owned: stop and claim again (the claim of a node that is still ours writes
    nothing).
    """
    owned = assignment.owned_infos()
    stale = {k for k, i in owned.items() if i.epoch is not None and i.epoch != topic_epochs.get(k[0], i.epoch)}
    if stale:
        log.warning(
            "%s: topic deleted or re-created under us; dropping %s without committing",
            consumer_id,
            partitions_text(stale),
        )
        assignment.begin_release(sorted(stale))
    rest = {k: i.thread_id for k, i in owned.items() if k not in stale}
    # No per-partition request while all is well: the watches say what changed. A partition put in
    # doubt by a commit may still be cached as ours: it is read afresh.
    assignment.forget_stale_doubts()
    doubted = set(assignment.doubted()) & set(rest)
    lost_list, spoiled_list = group.owner_nodes.lost_and_spoiled(rest, watched=True)
    lost, spoiled = set(lost_list), set(spoiled_list)
    recheck = {k: rest[k] for k in doubted - lost - spoiled}
    if recheck:
        more_lost, more_spoiled = group.owner_nodes.lost_and_spoiled(recheck)
        lost |= set(more_lost)
        spoiled |= set(more_spoiled)
    fetched = fetcher.assigned() if fetcher is not None else None
    again = spoiled | (doubted - lost)
    drifted = (set(rest) - fetched - lost - again) if fetched is not None else set()
    if lost:
        log.warning("%s: owner nodes of %s are no longer ours; claiming again", consumer_id, partitions_text(lost))
        assignment.drop(lost)
    if again:
        log.warning(
            "%s: owner nodes of %s were rewritten by someone else or in doubt; releasing and claiming them again",
            consumer_id,
            partitions_text(again),
        )
        assignment.begin_release(sorted(again))
    if drifted:
        log.warning("%s: %s owned but not fetched; starting them again", consumer_id, partitions_text(drifted))
        assignment.drop(drifted)
        assignment.adopt_orphans({k: rest[k] for k in drifted})
    restart = again | drifted
    # Fetched but not owned (left over from a lost session): nothing of it may be delivered anyway.
    extra = (fetched - set(owned)) if fetched is not None else set()
    if fetcher is not None and (lost or restart or extra):
        fetcher.remove(sorted(lost | restart | extra))
