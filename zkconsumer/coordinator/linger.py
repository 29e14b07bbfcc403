"""Release linger: keep released owner nodes a while after the commit when the next owner may be a Scala member."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable

from zkconsumer.errors import ZOOKEEPER_FAILURES, describe
from zkconsumer.zookeeper.group import GroupZk
from zkconsumer.zookeeper.znodes import consumer_id_of_thread

log = logging.getLogger(__name__)


class ReleaseLinger:
    """Why: a Scala member reads a partition's offset *before* it claims the owner node. If we
    committed and deleted the node in between, its claim succeeds and it starts from the offset
    it read before our commit, delivering again what we delivered. While our node stays, that
    claim fails and Scala reads the offsets again on its next attempt. So after every commit that
    precedes a release, the owner nodes stay `linger_s` longer when a member that did not mark
    itself as a zkconsumer member (GroupZk.mark_as_zkconsumer) may claim them: a new owner our
    assignment names, or, if the members changed since we decided, any member registered now
    (it may compute another assignment than ours). Hand-overs between zkconsumer members in a
    mixed group do not wait.

    Example::

        linger = ReleaseLinger(group, 1.0, stopping)
        linger.handing_over(["g_scala-1-0"], decided_with={"g_me", "g_scala-1"})  # after the commit
        if linger.wait():                      # before deleting the owner nodes
            ...delete them...
    """

    def __init__(self, group: GroupZk, linger_s: float, stopping: threading.Event) -> None:
        self.group = group
        self.linger_s = linger_s
        self._stopping = stopping
        self._until = 0.0  # monotonic time before which released owner nodes stay

    def handing_over(self, new_owner_threads: Iterable[str], decided_with: Collection[str] | None = None) -> None:
        """Owner nodes are about to go (their commit is written): linger if a Scala member may claim.
        `decided_with`: the members the assignment was computed from (None: unknown, check all)."""
        if self.linger_s <= 0:
            return
        named = {consumer_id_of_thread(thread) for thread in new_owner_threads}
        unmarked = self._unmarked(named, decided_with)
        if unmarked:
            log.info(
                "%s: keeping released owner nodes %.1fs after the commit: %s may be a Scala member",
                self.group.consumer_id,
                self.linger_s,
                ", ".join(sorted(unmarked)),
            )
            self._until = max(self._until, time.monotonic() + self.linger_s)

    def wait(self) -> bool:
        """Until the linger of the last hand-over is over: True; False when stopping cut it short
        (the caller then leaves the nodes to the session's close, after `before_leaving`)."""
        left = self._until - time.monotonic()
        return left <= 0 or not self._stopping.wait(left)

    def before_leaving(self, budget_s: float) -> None:
        """Leaving hands every partition over: after the final commit, linger when any other member
        may be a Scala member, at most `budget_s` (ZooKeeper unreachable: our nodes outlive us anyway)."""
        linger_s = min(self.linger_s, budget_s)
        if linger_s <= 0:
            return
        try:
            unmarked = self._unmarked(set(), None, fail_safe=False)
        except ZOOKEEPER_FAILURES as exc:
            log.warning(
                "%s: leaving without a linger: cannot read the group (%s)", self.group.consumer_id, describe(exc)
            )
            return
        if unmarked:
            log.info(
                "%s: leaving %.1fs after the final commit: %s may be a Scala member",
                self.group.consumer_id,
                linger_s,
                ", ".join(sorted(unmarked)),
            )
            time.sleep(linger_s)

    def _unmarked(self, named: set[str], decided_with: Collection[str] | None, *, fail_safe: bool = True) -> set[str]:
        """`named`, plus every member registered now unless they are exactly `decided_with`, without
        a zkconsumer marker (ourselves excepted)."""
        try:
            registered = set(self.group.member_ids())
            members = named if decided_with is not None and registered == set(decided_with) else named | registered
            unmarked = members - self.group.zkconsumer_members()
        except ZOOKEEPER_FAILURES as exc:
            if not fail_safe:
                raise
            log.warning(
                "%s: cannot read the group's zkconsumer markers (%s); lingering as for a Scala member",
                self.group.consumer_id,
                describe(exc),
            )
            return named or {"(unknown)"}
        return unmarked - {self.group.consumer_id}
