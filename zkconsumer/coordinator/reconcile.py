"""A rebalance's reconcile step: owned partitions it can no longer vouch for are released, dropped or restarted."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from zkconsumer.consumer.partition_fetcher import PartitionFetcher
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
    of our session rewritten by hand: ours to delete, so deleted (as an orphan) and claimed again.
    In doubt (a watch or a commit said so; delivery already stopped) but read again as ours, or not
    fetched although owned: restarted, its node deleted and claimed again, since what the iterators
    dropped meanwhile must be fetched again from the last commit.
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
    drifted = (set(rest) - fetched - lost - spoiled) if fetched is not None else set()
    drifted |= doubted - lost - spoiled
    if lost:
        log.warning("%s: owner nodes of %s are no longer ours; claiming again", consumer_id, partitions_text(lost))
        assignment.drop(lost)
    if spoiled:
        log.warning(
            "%s: owner nodes of %s were rewritten by someone else; deleting and claiming them again",
            consumer_id,
            partitions_text(spoiled),
        )
    if drifted:
        log.warning(
            "%s: %s owned but not fetched, or stopped while in doubt; starting them again",
            consumer_id,
            partitions_text(drifted),
        )
    restart = spoiled | drifted
    if restart:
        assignment.drop(restart)
        assignment.adopt_orphans({k: rest[k] for k in restart})
    # Fetched but not owned (left over from a lost session): nothing of it may be delivered anyway.
    extra = (fetched - set(owned)) if fetched is not None else set()
    if fetcher is not None and (lost or restart or extra):
        fetcher.remove(sorted(lost | restart | extra))
