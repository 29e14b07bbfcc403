"""Release linger: keep released owner nodes a while after the commit when the next owner may be a Scala member."""
from __future__ import annotations

import logging
import threading
import time
from typing import Mapping

from zkconsumer.errors import is_retriable
from zkconsumer.group import GroupZk
from zkconsumer.zkdata import consumer_id_of_thread

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class ReleaseLinger:
    """Why: a Scala member reads a partition's offset *before* it claims the owner node. If we
    committed and deleted the node in between, its claim succeeds and it starts from the offset
    it read before our commit, delivering again what we delivered. While our node stays, that
    claim fails and Scala reads the offsets again on its next attempt. So after the commit that
    precedes a release, the owner nodes stay `linger_s` longer whenever a partition goes to a
    member that did not mark itself as a zkconsumer member (GroupZk.mark_as_zkconsumer).

    Example::

        linger = ReleaseLinger(group, 1.0, stopping)
        linger.handing_over({("t", 0): "g_scala-1-0"})   # after the commit
        linger.wait()                                      # before deleting the owner nodes
    """

    def __init__(self, group: GroupZk, linger_s: float, stopping: threading.Event) -> None:
        self.group = group
        self.linger_s = linger_s
        self._stopping = stopping
        self._until = 0.0  # monotonic time before which released owner nodes stay

    def handing_over(self, handed_to: Mapping[TopicPartition, str]) -> None:
        """Released partitions -> the thread ids the group's assignment gives them to."""
        members = {consumer_id_of_thread(thread) for thread in handed_to.values()} - {self.group.consumer_id}
        if self.linger_s <= 0 or not members:
            return
        unmarked = self._unmarked(members)
        if unmarked:
            log.info("%s: keeping released owner nodes %.1fs after the commit: %s may be a Scala member",
                     self.group.consumer_id, self.linger_s, ", ".join(sorted(unmarked)))
            self._until = max(self._until, time.monotonic() + self.linger_s)

    def wait(self) -> None:
        """Until the linger of the last hand-over is over (at once when stopping: leaving lingers itself)."""
        while not self._stopping.is_set() and time.monotonic() < self._until:
            time.sleep(min(0.05, max(0.0, self._until - time.monotonic())))

    def before_leaving(self, budget_s: float) -> None:
        """Leaving hands every partition over: after the final commit, linger when any other member
        may be a Scala member (at most `budget_s`; ZooKeeper unreachable: our nodes outlive us anyway)."""
        linger_s = min(self.linger_s, budget_s)
        if linger_s <= 0:
            return
        try:
            others = set(self.group.member_ids()) - {self.group.consumer_id}
        except Exception as exc:  # noqa: BLE001 - classified right here
            if not is_retriable(exc):
                raise
            return
        unmarked = self._unmarked(others) if others else set()
        if unmarked:
            log.info("%s: leaving %.1fs after the final commit: %s may be a Scala member",
                     self.group.consumer_id, linger_s, ", ".join(sorted(unmarked)))
            time.sleep(linger_s)

    def _unmarked(self, members: set[str]) -> set[str]:
        try:
            return members - self.group.zkconsumer_members()
        except Exception as exc:  # noqa: BLE001 - cannot tell: treat them as Scala members
            if not is_retriable(exc):
                raise
            return members
