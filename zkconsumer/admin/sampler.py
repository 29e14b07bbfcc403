"""Samples of one group over time, the imperative shell of `groups status`: ZooKeeper's side and the log ends."""

from __future__ import annotations

import time
from collections.abc import Callable

from kazoo.client import KazooClient

from zkconsumer.admin.group_lag import Sample, Seen, group_status, ownership_of
from zkconsumer.admin.log_offsets import Watermarks
from zkconsumer.admin.snapshot import take_snapshot
from zkconsumer.admin.verdicts import GroupVerdict
from zkconsumer.partitions import TopicPartition


class GroupSampler:
    """Takes samples of `group`: per partition its committed offset and offset node's last write,
    its log end (through `marks`), its owner and what the registrations say of it.

    Each sample is one read of the group as `groups describe` reads it (take_snapshot),
    timed when its log ends have been read. Example::

        with zk_session(...) as client, open_watermarks(client, BrokerAccess()) as marks:
            sampler = GroupSampler(client, "billing", marks)
            sampler.watch(window_s=30, interval_s=1)
            print(sampler.verdict().status)
    """

    def __init__(
        self,
        client: KazooClient,
        group: str,
        marks: Watermarks | None,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.group = group
        self.marks = marks
        self.samples: list[Sample] = []
        self._clock, self._monotonic, self._sleep = clock, monotonic, sleep

    def sample(self) -> Sample:
        """Read the group once and keep the sample."""
        snapshot = take_snapshot(self.client, self.group, self.marks)
        at_ms = int(self._clock() * 1000)  # after the log ends: every commit seen was made before
        if self.marks is not None:
            self.marks.quiet = True  # an unreachable broker is said once, not once per sample
        sessions = {cid: member.session for cid, member in snapshot.members.items()}
        subscribed = {topic for member in snapshot.members.values() for topic in member.threads}
        partitions: dict[TopicPartition, Seen] = {}
        for row in snapshot.partitions:
            key = (row.topic, row.partition)
            owner = row.owner
            # A negative offset is none, as members read it.
            committed = row.offset if row.offset is not None and row.offset >= 0 else None
            partitions[key] = Seen(
                at_ms=at_ms,
                committed=committed,
                written=snapshot.offsets_written.get(key) if committed is not None else None,
                log_end=row.log_end,
                log_start=row.log_start,
                owner=None if owner is None else owner.thread_id,
                ownership=ownership_of(
                    None if owner is None else owner.thread_id,
                    None if owner is None else owner.session,
                    sessions,
                    row.topic in subscribed,
                ),
            )
        taken = Sample(at_ms, partitions, tuple(sorted(snapshot.members)))
        self.samples.append(taken)
        return taken

    def watch(self, window_s: float, interval_s: float, on_sample: Callable[[Sample], None] | None = None) -> None:
        """Sample now and every `interval_s` until `window_s` has passed (a slow read delays the
        next sample, never skips the last)."""
        start = self._monotonic()
        ticks = int(window_s // interval_s)
        for tick in range(ticks + 1):
            wait = start + tick * interval_s - self._monotonic()
            if wait > 0:
                self._sleep(wait)
            taken = self.sample()
            if on_sample is not None:
                on_sample(taken)

    def verdict(self) -> GroupVerdict:
        """The group's verdict from every sample taken (Burrow's rules from two on)."""
        return group_status(self.samples)
