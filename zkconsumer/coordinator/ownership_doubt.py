"""Acting on GroupZk's signals: delivery of a partition whose owner node may not be ours stops at once, then a rebalance decides."""

from __future__ import annotations

import logging
from collections.abc import Callable

from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger("zkconsumer.coordinator.rebalancer")  # these lines belong with the rebalancer's


def follow_ownership_signals(group: GroupZk, assignment: Assignment, trigger: Callable[[str], None]) -> None:
    """Subscribe the member to `group.signals` (zookeeper/signals.py).

    An owner node we hold deleted or rewritten by someone else (its watch fired), or found foreign by
    a commit: `Assignment.doubt` stops its delivery on the reporting thread, before anything else,
    and a rebalance is triggered; only the rebalance thread then reads the node again and releases,
    drops or claims (reconcile.reconcile_owned). A write refused on our session fence triggers a
    rebalance too: its `ensure_registered` finds the fence not ours (GroupZk.is_registered) and
    registers and fences again, so a fence node deleted or written to by hand costs one attempt.
    Both callbacks run on kazoo's or a committing thread: no ZooKeeper call, no blocking.
    """

    def doubt(keys: list[TopicPartition], why: str) -> None:
        stopped = assignment.doubt(keys)
        if stopped:
            log.warning("%s: stopped delivering %s: %s", group.consumer_id, partitions_text(stopped), why)
            trigger(f"ownership in doubt: {why}")

    def refused(why: str) -> None:
        trigger(f"a fenced write was refused: {why}")

    group.signals.subscribe(doubt=doubt, refused=refused)
