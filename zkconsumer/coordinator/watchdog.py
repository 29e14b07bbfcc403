"""Periodic ownership check: unowned partitions, zombie owners and fetch drift trigger a rebalance."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping

from zkconsumer.consumer.fetcher import PartitionFetcher
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.assignors import GroupAssignment
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.periodic import PeriodicTask
from zkconsumer.group_problems import ownership_problems
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.group import GroupZk
from zkconsumer.zookeeper.znodes import consumer_id_of_thread

log = logging.getLogger(__name__)


def find_problems(
    partitions: Mapping[str, Iterable[int]],
    owners: Mapping[str, Mapping[int, str]],
    members: set[str],
    owned_here: set[TopicPartition],
    fetched_here: set[TopicPartition] | None,
    expected: Mapping[str, Mapping[int, str]] | None = None,
) -> list[str]:
    """What a rebalance should repair, as sorted one-line descriptions (pure): the details of
    group_problems.ownership_problems, the problem analysis the CLI's describe and verify share.

    partitions: topic -> partition ids we subscribe to; owners: topic -> partition -> owner
    thread id as found in ZooKeeper; members: live consumer ids; owned_here / fetched_here:
    what this member believes it owns and what its fetcher actually has assigned; expected:
    topic -> partition -> the thread the last assignment gave it (a live member holding a
    partition assigned to another thread blocks that thread's claim).
    """
    found = ownership_problems(partitions, owners, members, owned_here, fetched_here, expected)
    return [problem.detail for problem in found]


def partitions_to_check(
    assignment: Mapping[TopicPartition, str],
    me: str,
    members: set[str],
    marked: set[str],
    accounted: Iterable[TopicPartition],
    topics: Collection[str] | None = None,
) -> set[TopicPartition]:
    """The partitions one member's watchdog reads (pure): those the assignment (partition ->
    thread) gives its threads; those whose owner node it still accounts for (`accounted`: owned,
    releasing or orphan); and, for the zkconsumer member with the lowest id, those of every
    member without a zkconsumer marker (Scala members run no watchdog). With one zkconsumer member
    registered, every partition is checked by somebody, and a change costs each member what moved
    in its own share. `topics` limits the assignment's partitions to those topics (not the accounted ones).
    A GroupAssignment is taken thread by thread, without a walk over the group's partitions."""
    zkconsumer_members = sorted((marked & members) | {me})
    designated = zkconsumer_members[0] == me
    group = assignment if isinstance(assignment, GroupAssignment) else GroupAssignment.from_pairs(assignment)
    out = set(accounted)
    for thread in group.threads():
        try:
            owner: str | None = consumer_id_of_thread(thread)
        except ValueError:
            owner = None
        if owner == me or (designated and owner not in marked):
            share = group.share(thread)  # built only for a thread this member checks
            out.update(share if topics is None else (k for k in share if k[0] in topics))
    return out


class OwnershipCheck:
    """The ownership check a member's watchdog runs (Rebalancer.health_problems): reads the owner
    nodes of the partitions it checks from the watched caches and words the problems as
    find_problems does. It changes nothing: the assignment is the rebalance thread's alone, so a
    problem only ever leads to a rebalance (Watchdog triggers one when it persists).

    `stopping` is set when the member leaves.
    """

    def __init__(
        self,
        consumer_id: str,
        group: GroupZk,
        assignment: Assignment,
        membership: Membership,
        stopping: threading.Event,
    ) -> None:
        self.consumer_id = consumer_id
        self.group = group
        self.assignment = assignment
        self.membership = membership
        self._stopping = stopping

    def problems(
        self,
        last_assignment: Mapping[TopicPartition, str],
        my_topics: set[str],
        fetcher: PartitionFetcher | None,
    ) -> list[str]:
        """Ownership problems in the partitions to check, given the last assignment ((topic,
        partition) -> thread), the topics this member subscribes to, and its fetcher."""
        # From the watched caches: an idle check sends no request; one after a change reads what
        # changed in the partitions this member checks, not the whole group's moves.
        reads = self.group.reads
        members = set(reads.member_ids())
        owned = set(self.assignment.owned())
        accounted = owned | set(self.assignment.releasing())  # a snapshot: the rebalance thread owns it
        keys = partitions_to_check(
            last_assignment, self.consumer_id, members, reads.marked_member_ids(), accounted, my_topics
        )
        if self._stopping.is_set():
            return []  # leaving: the answer would not be acted on, and the session is closing
        found = reads.owner_threads(sorted(keys))
        owners: dict[str, dict[int, str]] = {}
        for (topic, partition), thread in found.items():
            if thread is not None:
                owners.setdefault(topic, {})[partition] = thread
        partitions: dict[str, dict[int, str]] = {}  # what is checked, with the thread it is assigned to
        for topic, partition in keys:
            assigned = last_assignment.get((topic, partition)) if topic in my_topics else None
            if assigned is not None:
                partitions.setdefault(topic, {})[partition] = assigned
        fetched = fetcher.assigned() if fetcher is not None else None
        problems = find_problems(
            {t: parts.keys() for t, parts in partitions.items()},
            owners,
            members,
            owned,
            fetched,
            expected=partitions,
        )
        # A node of our consumer id that we do not account for: none should exist (every node we
        # create is installed, pending deletion, or refused by ZooKeeper). Reported, not touched.
        problems += [
            f"{t}-{p} is held by {thread}, this member's thread, but not owned or releasing here"
            for (t, p), thread in sorted(found.items())
            if thread is not None and (t, p) not in accounted and self._is_our_thread(thread)
        ]
        return problems

    def _is_our_thread(self, thread: str) -> bool:
        try:
            return consumer_id_of_thread(thread) == self.consumer_id
        except ValueError:
            return False


class Watchdog:
    """Every interval, compare ZooKeeper's owners with the group; a problem seen by two checks with
    no rebalance activity between them triggers a rebalance and counts in `alerts`.

    `activity` moves with this member's rebalance triggers, run starts and ends, and is None while
    a run is under way or pending (RebalanceWorker.activity): a change in flight (ours, or the one
    a group event announced) is not a problem until it has outlived the rebalance round it caused.

    Example::

        watchdog = Watchdog("g_c1", interval_s=10.0, check=rebalancer.health_problems,
                            trigger=worker.trigger, activity=worker.activity)
        watchdog.start(); ...; watchdog.stop()
    """

    def __init__(
        self,
        consumer_id: str,
        *,
        interval_s: float,
        check: Callable[[], list[str]],
        trigger: Callable[[str], None],
        on_error: Callable[[BaseException], None] | None = None,
        activity: Callable[[], int | None] = lambda: 0,
    ) -> None:
        self._check = check
        self._trigger = trigger
        self._activity = activity
        self._last_activity: int | None = None
        self._previous: set[str] = set()
        self.alerts = 0  # checks that found a persistent problem (zkconsumer_watchdog_alerts)
        self.problems: list[str] = []  # the persistent problems of the last check
        self._task = PeriodicTask(f"{consumer_id}-watchdog", interval_s, self.run_once, on_error=on_error)

    def start(self) -> None:
        self._task.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop checking. A check under way is not waited for beyond `timeout`: it only reads, and
        its reads fail quietly once the session is closed."""
        self._task.stop(timeout)

    def run_once(self) -> list[str]:
        """One check; returns the problems that persisted since the previous check with no
        rebalance activity in between."""
        before = self._activity()
        if before is None:  # a rebalance is under way or pending: what a check saw now could not count
            self._last_activity, self._previous, self.problems = None, set(), []
            return []  # and not reading saves the group O(partitions) reads per member mid-change
        current = set(self._check())
        after = self._activity()
        calm = before is not None and before == after  # no rebalance ran or began during the check
        quiet = calm and before == self._last_activity  # ...nor since the previous check
        self._last_activity = after
        persistent = sorted(current & self._previous) if quiet else []
        self._previous = current if calm else set()  # a check during a change proves nothing
        self.problems = persistent
        if persistent:
            self.alerts += 1
            log.warning(
                "watchdog: %d ownership problems persist (%s); rebalancing", len(persistent), "; ".join(persistent[:5])
            )
            self._trigger(f"watchdog: {persistent[0]}")
        return persistent
