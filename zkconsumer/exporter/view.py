"""Every group under the chroot, kept current by watches, with a bounded window of samples each and their verdicts."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

from zkconsumer.admin import NOT_JUDGED, GroupVerdict, Judged, Record, judge_runs
from zkconsumer.cluster import broker_nodes
from zkconsumer.errors import ZkDataError, ZooKeeperAccessDenied
from zkconsumer.exporter.group_watch import GroupWatch
from zkconsumer.exporter.sampling import GroupSample, SampleMeta, Topic, group_records, subscribed_topics
from zkconsumer.exporter.window import GroupWindow, WindowSnapshot
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched import WatchedFolder, WatchedNodes

CONSUMERS = "/consumers"
# A topic nobody subscribes to is forgotten this long after its last commit (Burrow's expire-group
# and Kafka's offsets.retention.minutes default to the same 7 days).
RETIRED_AFTER_S = 7 * 24 * 3600.0
# A group with no member, no owner node and no commit for this long is left out (Burrow's expire-group).
EXPIRE_GROUP_AFTER_S = 7 * 24 * 3600.0
# A tick samples the groups a slice of about this many partitions at a time (by their last sample),
# so that a commit between two slices is shown after one slice rather than the whole tick (at
# 1,000 groups of 100 partitions a tick took 3 s: docs/performance.md). Each slice asks its own
# log ends (one ListOffsets per leader): its commits are never newer than its log ends.
SLICE_PARTITIONS = 2_000
log = logging.getLogger(__name__)


class LogEndSource(Protocol):
    """Where log ends come from (exporter.log_ends.LogEnds): `reason` says why some were missing."""

    reason: str | None

    def read(self, keys: Iterable[TopicPartition]) -> Mapping[TopicPartition, int]: ...


@dataclass(frozen=True)
class GroupState:
    """One group at the last refresh: its window of samples (oldest first) and their verdict.

    `samples` and `last` are built from the window when asked for (an API request of one group);
    the metrics read `window` directly."""

    name: str
    window: WindowSnapshot
    verdict: GroupVerdict

    @cached_property
    def samples(self) -> tuple[GroupSample, ...]:
        return self.window.samples()

    @cached_property
    def last(self) -> GroupSample:
        return self.window.sample(-1)


@dataclass(frozen=True)
class ViewState:
    """What a refresh published: scrapes and API requests read it, never ZooKeeper."""

    at_ms: int  # when the last refresh ended (0: none yet)
    groups: Mapping[str, GroupState] = field(default_factory=dict)
    interval_s: float = 0.0
    log_ends_reason: str | None = None  # why some log ends are missing, None when all answered
    unreadable: Mapping[str, str] = field(default_factory=dict)  # group -> why ZooKeeper refused its nodes
    unseen_partitions: int = 0  # partitions of the watched groups no broker gave a log end for
    expired: tuple[str, ...] = ()  # groups left out: no member, no owner, no commit for --expire-group-after


class ClusterView:
    """The groups under `/consumers` (those `groups` fully matches, or all), refreshed on demand.

    A refresh reads each group through its GroupWatch (only what changed since the last: a watch
    fired), the topics' partitions from /brokers/topics (watched too), every log end (one
    request per partition leader), then appends one sample per group to its window (at most `window_s / interval_s + 1` samples,
    kept as runs: exporter.window) and judges it with admin.group_lag.judge_runs, Burrow's rules over
    the window as `groups status` applies them, partitions whose verdict cannot have changed kept.

    Example::

        view = ClusterView(ZkIO(client, 10.0), log_ends, window_s=60, interval_s=5)
        state = view.refresh()
        print(state.groups["billing"].verdict.status)
    """

    def __init__(
        self,
        io: ZkIO,
        log_ends: LogEndSource | None,
        *,
        window_s: float,
        interval_s: float,
        groups: re.Pattern[str] | None = None,
        retired_after_s: float | None = RETIRED_AFTER_S,
        expire_group_after_s: float | None = EXPIRE_GROUP_AFTER_S,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        self.io = io
        self.on_change = on_change  # kazoo's thread: a watched node of this group changed
        self.retired_after_ms = None if retired_after_s is None else int(retired_after_s * 1000)
        self.expire_after_ms = None if expire_group_after_s is None else int(expire_group_after_s * 1000)
        self.log_ends = log_ends
        self.pattern = groups
        self.interval_s = interval_s
        self.max_samples = int(window_s // interval_s) + 1
        self._clock = clock
        self._group_list = WatchedFolder(io, CONSUMERS)
        self._topic_list = WatchedFolder(io, znodes.BROKER_TOPICS)
        self._topic_nodes = WatchedNodes(io, "read topic nodes")
        self._decoded: dict[str, tuple[tuple[int, int], tuple[int, ...]]] = {}  # topic -> (czxid, mzxid), parts
        self._watches: dict[str, GroupWatch] = {}
        self._windows: dict[str, GroupWindow] = {}
        self._judged: dict[str, Judged] = {}  # a group's last runs and verdicts
        self._forgotten_requests = 0
        self.state = ViewState(0, {}, interval_s)
        self._at_ms = 0  # the last sample's time
        self._tick = _Tick(first=True)  # the tick under way (or the last)

    @property
    def requests(self) -> int:
        """ZooKeeper requests sent so far by every read of the view."""
        own = self._group_list.requests + self._topic_list.requests + self._topic_nodes.requests
        return own + self._forgotten_requests + sum(w.requests for w in self._watches.values())

    def invalidate(self) -> None:
        """Re-read everything at the next refresh (the session was lost, and its watches with it)."""
        self._group_list.invalidate()
        self._topic_list.invalidate()
        self._topic_nodes.invalidate()
        for watch in self._watches.values():
            watch.invalidate()

    def group_names(self) -> list[str]:
        return [g for g in self._group_list.names() if self.pattern is None or self.pattern.fullmatch(g)]

    def refresh(self, *, between_ticks: bool = False, only: Collection[str] | None = None) -> ViewState:
        """Read what changed, take one sample of every group, judge each; publish and return the state.

        `between_ticks`: a refresh sooner than the interval (a watch fired): each group's sample
        takes the place of its newest one, so the window keeps one sample per interval. `only`:
        sample just these groups (already watched ones: those whose watches fired), and their log
        ends; every other group is published as the last refresh left it. Without `only`, a tick:
        `begin_tick` and every slice of it in turn."""
        if only is not None:
            return self._refresh_some([g for g in self.group_names() if g in only and g in self._windows], self.state)
        slices = self.begin_tick()
        for number, names in enumerate(slices):
            self.tick_slice(names, between_ticks=between_ticks, last=number == len(slices) - 1)
        return self.state

    def begin_tick(self) -> list[list[str]]:
        """Start a refresh of every group: forget the groups gone (published at once), and give the
        groups to sample in slices of about SLICE_PARTITIONS partitions each (by their last sample;
        one slice at least, even of no group), each to be passed to `tick_slice` in turn."""
        names = self.group_names()
        for gone in [g for g in self._watches if g not in names]:
            self._forgotten_requests += self._watches.pop(gone).requests
            self._windows.pop(gone, None)
            self._judged.pop(gone, None)
        listed = set(names)
        before = self.state
        self.state = replace(
            before,
            groups={g: state for g, state in before.groups.items() if g in listed},
            unreadable={g: why for g, why in before.unreadable.items() if g in listed},
            expired=tuple(g for g in before.expired if g in listed),
        )
        self._tick = _Tick(first=True)
        slices: list[list[str]] = [[]]
        size = 0
        for group in names:
            window = self._windows.get(group)
            partitions = 1 if window is None else max(1, window.partitions)
            if slices[-1] and size + partitions > SLICE_PARTITIONS:
                slices.append([])
                size = 0
            slices[-1].append(group)
            size += partitions
        return slices

    def tick_slice(self, names: list[str], *, last: bool, between_ticks: bool = False) -> ViewState:
        """Sample and judge one slice of the tick `begin_tick` started (its groups' nodes, then their
        log ends, then the time); publish the state with them (the tick's totals at its `last`)."""
        tick = self._tick
        whole = tick.first and last  # one slice: the topics of no other slice to keep
        groups, expired, unreadable, ends, keys = self._sample(names, between_ticks, some=not whole)
        tick.first = False
        tick.keys |= keys
        tick.seen |= ends.keys()
        tick.reason = tick.reason or ("no broker to ask" if self.log_ends is None else self.log_ends.reason)
        if last and not whole:  # forget the topics no group of this tick wanted (no request for the others)
            self._topic_nodes.read([znodes.topic_path(t) for t in sorted(tick.wanted)])
        before = self.state
        sampled = set(names)
        self.state = ViewState(
            self._at_ms,
            {**{g: s for g, s in before.groups.items() if g not in sampled}, **groups},
            self.interval_s,
            tick.reason if last else before.log_ends_reason,
            {**{g: e for g, e in before.unreadable.items() if g not in sampled}, **unreadable},
            len(tick.keys - tick.seen) if last else before.unseen_partitions,
            tuple(sorted([*(g for g in before.expired if g not in sampled), *expired])),
        )
        return self.state

    def _refresh_some(self, names: list[str], before: ViewState) -> ViewState:
        groups, expired, unreadable, _ends, _keys = self._sample(names, True, some=True)
        kept = {g: state for g, state in before.groups.items() if g not in names}
        still_expired = [g for g in before.expired if g not in names]
        self.state = ViewState(
            self._at_ms,
            {**kept, **groups},
            self.interval_s,
            before.log_ends_reason,  # the groups' own count says which partitions are unseen
            {**{g: e for g, e in before.unreadable.items() if g not in names}, **unreadable},
            before.unseen_partitions,
            tuple(sorted([*still_expired, *expired])),
        )
        return self.state

    def _sample(
        self, names: list[str], between_ticks: bool, *, some: bool = False
    ) -> tuple[dict[str, GroupState], list[str], dict[str, str], dict[TopicPartition, int], set[TopicPartition]]:
        """Read, sample and judge these groups (`some`: not every group; the other groups' topics stay
        watched): their states, the expired, the unreadable, the log ends, the keys."""
        all_topics = self._topic_list.names()
        read = {}
        wanted: dict[str, tuple[set[str], set[str], list[str]]] = {}
        unreadable: dict[str, str] = {}
        for group in names:
            watch = self._watches.get(group)
            if watch is None:
                watch = self._watches[group] = GroupWatch(self.io, group, self.on_change)
            try:
                nodes = read[group] = watch.read()
            except ZooKeeperAccessDenied as exc:  # one group's ACL: the others are still served
                unreadable[group] = str(exc)
                continue
            problems: list[str] = []
            subscribed = subscribed_topics(group, nodes.members, all_topics, problems)
            wanted[group] = (set(nodes.topics) | subscribed, subscribed, problems)
        wanted_topics = {t for topic_set, _, _ in wanted.values() for t in topic_set}
        self._tick.wanted |= wanted_topics
        topics = self._topics(wanted_topics, keep_others=some)
        # Only partitions /brokers/topics lists: librdkafka fails a whole ListOffsets batch whose
        # leader lookup times out, which one offset node of a deleted topic would cause.
        keys = {(t, p) for t, topic in topics.items() for p in topic.partitions}
        ends = dict(self.log_ends.read(keys)) if self.log_ends is not None and keys else {}
        at_ms = self._at_ms = int(self._clock() * 1000)  # after the log ends: every commit seen was made before
        groups = {}
        expired: list[str] = []
        for group in read:
            topic_set, subscribed, problems = wanted[group]
            meta, records = group_records(
                group,
                read[group],
                topics,
                topic_set,
                ends,
                at_ms,
                problems,
                subscribed=subscribed,
                retired_after_ms=self.retired_after_ms,
            )
            if self._expired(meta, records, at_ms):
                expired.append(group)
                self._windows.pop(group, None)
                self._judged.pop(group, None)
                continue
            window = self._windows.get(group)
            if window is None:
                window = self._windows[group] = GroupWindow(self.max_samples)
            (window.replace_newest if between_ticks else window.append)(meta, records)
            snapshot = window.snapshot()
            verdict, self._judged[group] = judge_runs(
                snapshot.runs, snapshot.times, snapshot.first, meta.members, self._judged.get(group, NOT_JUDGED)
            )
            groups[group] = GroupState(group, snapshot, verdict)
        return groups, expired, unreadable, ends, keys

    def _expired(self, meta: SampleMeta, records: Mapping[TopicPartition, Record], at_ms: int) -> bool:
        """No member, no owner node, and no commit for `expire_after_ms` (or never): a retired group."""
        if self.expire_after_ms is None or meta.members or any(r[3] is not None for r in records.values()):
            return False
        return meta.last_commit_ms is None or at_ms - meta.last_commit_ms > self.expire_after_ms

    def _topics(self, wanted: set[str], *, keep_others: bool = False) -> dict[str, Topic]:
        """topic -> its partitions and epoch, for each wanted topic that has a node (watched; the
        others stay watched with `keep_others`, else they are forgotten)."""
        paths = {t: znodes.topic_path(t) for t in sorted(wanted)}
        read = self._topic_nodes.add if keep_others else self._topic_nodes.read
        found = read(list(paths.values()))
        out = {}
        for topic, path in paths.items():
            entry = found[path]
            if entry is None:
                continue
            data, stat = entry
            known = self._decoded.get(topic)
            if known is None or known[0] != (stat.czxid, stat.mzxid):
                try:
                    partitions = tuple(sorted(broker_nodes.decode_topic_partitions(data, path)))
                except ZkDataError as exc:
                    log.warning("no partitions for topic %s: %s", topic, exc)
                    partitions = ()
                known = (stat.czxid, stat.mzxid), partitions
                self._decoded[topic] = known
            out[topic] = Topic(known[1], stat.czxid)
        return out


@dataclass
class _Tick:
    """A tick's totals across its slices: the partitions asked and answered, the topics wanted, the
    first reason some log ends were missing."""

    first: bool
    keys: set[TopicPartition] = field(default_factory=set)
    seen: set[TopicPartition] = field(default_factory=set)
    wanted: set[str] = field(default_factory=set)
    reason: str | None = None
