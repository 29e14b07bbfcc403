"""Release linger: keep released owner nodes after the commit for as long as a Scala joiner needs to read and claim."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from zkconsumer.config.timing import LINGER_BUDGET_SHARE
from zkconsumer.errors import ZOOKEEPER_FAILURES, describe
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper.group import GroupZk
from zkconsumer.zookeeper.znodes import consumer_id_of_thread

log = logging.getLogger(__name__)


# A Scala member reads the offset of every partition of its share (one round trip each), then
# creates every owner node (one each): between its read of one of ours and its create of it lie
# at most two round trips per partition of its share.
ROUND_TRIPS_PER_PARTITION = 2
# Its round trips are not ours: a JVM still warming up, a GC pause, a longer way to ZooKeeper.
MARGIN = 3
# Round trips measured by the last looks at the group (two reads each); the linger is sized from the
# slowest, so one fast sample on an idle server cannot shorten it.
SAMPLES = 8
# A partition handed over after a linger is claimed for good once seen owned at two looks a retry
# budget apart: a Scala attempt that fails creates owner nodes and deletes them again on its
# rollback, and one look may land inside it. A nudge that fails is tried again at the next look, up
# to this many looks in all.
OWNED_LOOKS = 2
MAX_LOOKS = 3


def linger_seconds(shares: Iterable[int], round_trip_s: float, *, floor_s: float, max_s: float) -> float:
    """How long released owner nodes stay after the commit (pure): 0 when no member that may be a
    Scala member may claim them (`shares`, the partitions each such member takes, is empty) or the
    linger is off (`floor_s` 0); else what the largest share's read-to-claim gap needs at our
    measured `round_trip_s`, at least `floor_s`, at most `max_s`."""
    largest = max(shares, default=None)
    if largest is None or floor_s <= 0:
        return 0.0
    need = MARGIN * ROUND_TRIPS_PER_PARTITION * max(largest, 1) * max(round_trip_s, 0.0)
    return min(max(max_s, floor_s), max(floor_s, need))


def estimated_shares(
    members: Collection[str], decided: Mapping[TopicPartition, str], registered: int
) -> dict[str, int]:
    """member -> partitions it takes (pure): its share in our assignment `decided` (partition ->
    thread id), or, for a member our assignment does not know (it joined since), an even split of
    every partition over the `registered` members."""
    counted = Counter(consumer_id_of_thread(thread) for thread in decided.values())
    even = math.ceil(len(decided) / max(1, registered))
    return {member: counted.get(member) or even for member in members}


@dataclass
class _Followed:
    """A partition handed over after a linger: when to look at it next, and what the looks saw."""

    due: float
    looks: int = 0
    owned_looks: int = 0  # looks in a row that saw it owned


@dataclass(frozen=True)
class _Look:
    """A fresh look at the group: the members that may be Scala members, how many are registered,
    and the slowest round trip of the recent looks (our measure of what a read costs)."""

    unmarked: frozenset[str]
    registered: int
    round_trip_s: float


class ReleaseLinger:
    """Why: a Scala member reads a partition's offset *before* it claims the owner node. If we
    committed and deleted the node in between, its claim succeeds and it starts from the offset
    it read before our commit, delivering again what we delivered. While our node stays, that
    claim fails and Scala reads the offsets again on its next attempt. So after every commit that
    precedes a release, the owner nodes stay longer when a member that did not mark itself as a
    zkconsumer member (GroupZk.mark_as_zkconsumer) may claim them: a new owner our assignment
    names, or, if the members changed since we decided, any member registered now (it may compute
    another assignment than ours). How long: what that member's read-to-claim gap needs, which
    grows with its share (`linger_seconds`), between `floor_s` and `max_s`, and never more than
    LINGER_BUDGET_SHARE (config/timing.py) of the oldest configured Scala release's retry budget (`budget_s`): a longer
    linger outlasts the joiner's last attempt, and it then owns nothing until /ids changes.
    Hand-overs between zkconsumer members in a mixed group do not wait.

    If a joiner gave up anyway (a slow attempt, a GC pause), the partitions handed over after a
    linger stay unowned: `released` follows them, and `follow_up` looks at them from a retry budget
    later until seen owned at two looks a budget apart, for the watchdog's check to nudge the group (Rebalancer.health_problems) as `groups rebalance` does.

    Example::

        linger = ReleaseLinger(group, 1.0, stopping, max_s=10.0)
        linger.handing_over(["g_scala-1-0"], {"g_me", "g_scala-1"}, decision.group)  # after the commit
        if linger.wait():                      # before deleting the owner nodes (no lock held)
            ...delete them...
    """

    def __init__(
        self,
        group: GroupZk,
        floor_s: float,
        stopping: threading.Event,
        *,
        max_s: float | None = None,
        budget_s: float = math.inf,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.group = group
        self.budget_s = budget_s
        cap = LINGER_BUDGET_SHARE * budget_s
        self.max_s = min(floor_s if max_s is None else max_s, cap)
        self.floor_s = min(floor_s, self.max_s)
        self._stopping = stopping
        self._clock = clock
        self._until = 0.0  # clock time before which released owner nodes stay
        self._samples: deque[float] = deque(maxlen=SAMPLES)
        self.last_linger_s = 0.0  # the last hand-over's (the handover benchmark reports it)
        self._lingered = False  # the pending release lingered for a member that may be a Scala member
        self._lock = threading.Lock()  # _followed: the rebalance thread adds, the watchdog's takes
        self._followed: dict[TopicPartition, _Followed] = {}  # released after a linger

    def handing_over(
        self,
        new_owner_threads: Iterable[str],
        decided_with: Collection[str] | None = None,
        decided: Mapping[TopicPartition, str] | None = None,
    ) -> None:
        """Owner nodes are about to go (their commit is written): linger if a Scala member may claim.
        `decided_with`: the members the assignment was computed from (None: unknown, check all);
        `decided`: that assignment, partition -> thread id (what each member takes)."""
        if self.floor_s <= 0:
            return
        named = {consumer_id_of_thread(thread) for thread in new_owner_threads}
        look = self._look(named, decided_with)
        shares = estimated_shares(look.unmarked, decided or {}, look.registered)
        linger_s = linger_seconds(shares.values(), look.round_trip_s, floor_s=self.floor_s, max_s=self.max_s)
        if linger_s > 0:
            log.info(
                "%s: keeping released owner nodes %.1fs after the commit (round trip %.1f ms, largest share %d): "
                "%s may be a Scala member",
                self.group.consumer_id,
                linger_s,
                look.round_trip_s * 1000,
                max(shares.values(), default=0),
                ", ".join(sorted(look.unmarked)),
            )
            self._until = max(self._until, self._clock() + linger_s)
            self.last_linger_s = linger_s
            self._lingered = True

    def released(self, keys: Iterable[TopicPartition]) -> None:
        """Their owner nodes were just deleted. After a hand-over that lingered, follow them: one
        still unowned a retry budget from now means a Scala joiner gave up on it."""
        if not self._lingered or math.isinf(self.budget_s):
            return
        due = self._clock() + self.budget_s
        with self._lock:
            self._followed.update((key, _Followed(due)) for key in keys)
        self._lingered = False

    def follow_up(self, owned: Collection[TopicPartition]) -> None:
        """Partitions handed over after a linger that nobody owns a Scala retry budget later (`owned`:
        ours now): their joiner gave up (ConsumerRebalanceFailedException) and waits for a change of
        /ids, so make one, as `groups rebalance` does. The owners come from the watch cache: a hint is
        enough for a nudge, which only makes every member rebalance once. One seen owned is looked at
        again a budget later (OWNED_LOOKS); one nudged is followed no more. The watchdog's thread."""
        due = self._take_due()
        if not due:
            return
        owners = self.group.reads.owner_threads(sorted(due))
        unowned = sorted(k for k in due if owners.get(k) is None and k not in owned)
        nudged = bool(unowned) and self._nudge(unowned)
        now = self._clock()
        with self._lock:
            for key, followed in due.items():
                followed.looks += 1
                if key in unowned:
                    followed.owned_looks = 0
                else:
                    followed.owned_looks += 1
                    followed.due = now + self.budget_s
                if not (
                    followed.owned_looks >= OWNED_LOOKS or (nudged and key in unowned) or followed.looks >= MAX_LOOKS
                ):
                    self._followed.setdefault(key, followed)  # a newer hand-over's follow wins

    def _nudge(self, unowned: list[TopicPartition]) -> bool:
        try:
            path = self.group.nudge_members()
        except ZOOKEEPER_FAILURES as exc:  # tried again at the next look (MAX_LOOKS)
            log.warning(
                "%s: could not nudge the group for %s: %s", self.group.consumer_id, partitions_text(unowned), exc
            )
            return False
        log.warning(
            "%s: %s, handed over after a linger, still unowned %.1fs later (a Scala member gave up?): "
            "nudged the group (%s) so every member rebalances",
            self.group.consumer_id,
            partitions_text(unowned),
            self.budget_s,
            path,
        )
        return True

    def stranded(self) -> list[TopicPartition]:
        """The followed partitions due for a look (taken off the list: `follow_up` puts back those it
        follows on): the caller looks whether someone owns them now."""
        return sorted(self._take_due())

    def _take_due(self) -> dict[TopicPartition, _Followed]:
        now = self._clock()
        with self._lock:
            due = {k: followed for k, followed in self._followed.items() if followed.due <= now}
            for key in due:
                del self._followed[key]
        return due

    def remaining(self) -> float:
        """Seconds the last hand-over's owner nodes still stay (0: they may go)."""
        return max(0.0, self._until - self._clock())

    def wait(self) -> bool:
        """Until the linger of the last hand-over is over: True; False when stopping cut it short
        (the caller then leaves the nodes to the session's close, after `leaving`'s linger)."""
        left = self.remaining()
        return left <= 0 or not self._stopping.wait(left)

    def leaving(self, decided: Mapping[TopicPartition, str], budget_s: float) -> float:
        """Leaving hands every partition over: seconds to keep our nodes after the final commit
        when another member may be a Scala member, at most `budget_s` (ZooKeeper unreachable: 0,
        our nodes outlive us anyway). Each member then takes about `decided`'s partitions split
        over the members that stay. The caller waits, holding no lock."""
        if min(self.floor_s, budget_s) <= 0:
            return 0.0
        try:
            look = self._look(set(), None, fail_safe=False)
        except ZOOKEEPER_FAILURES as exc:
            log.warning(
                "%s: leaving without a linger: cannot read the group (%s)", self.group.consumer_id, describe(exc)
            )
            return 0.0
        each = math.ceil(len(decided) / max(1, look.registered - 1))  # ours go to the members that stay
        shares = [each] * len(look.unmarked)
        linger_s = min(budget_s, linger_seconds(shares, look.round_trip_s, floor_s=self.floor_s, max_s=self.max_s))
        if linger_s > 0:
            log.info(
                "%s: leaving %.1fs after the final commit: %s may be a Scala member",
                self.group.consumer_id,
                linger_s,
                ", ".join(sorted(look.unmarked)),
            )
        return linger_s

    def _look(self, named: set[str], decided_with: Collection[str] | None, *, fail_safe: bool = True) -> _Look:
        """`named`, plus every member registered now unless they are exactly `decided_with`, without
        a zkconsumer marker (ourselves excepted). Fresh reads: a joiner whose event is still queued
        must not be missed."""
        try:
            began = self._clock()
            registered = set(self.group.member_ids())
            read = self._clock()
            members = named if decided_with is not None and registered == set(decided_with) else named | registered
            unmarked = members - self.group.zkconsumer_members()
            self._samples.extend((read - began, self._clock() - read))
        except ZOOKEEPER_FAILURES as exc:
            if not fail_safe:
                raise
            log.warning(
                "%s: cannot read the group's zkconsumer markers (%s); lingering as for a Scala member",
                self.group.consumer_id,
                describe(exc),
            )
            return _Look(frozenset(named or {"(unknown)"}), 1, 0.0)
        return _Look(frozenset(unmarked - {self.group.consumer_id}), len(registered), max(self._samples))
