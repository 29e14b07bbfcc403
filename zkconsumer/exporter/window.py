"""A group's window of samples kept as runs: a partition costs memory when what the sampler saw of it changed, not per sample."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zkconsumer.admin import PartitionFacts, Record, Run, Sample, Seen, run_facts, seen_record
from zkconsumer.exporter.sampling import GroupSample, SampleMeta
from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class WindowSnapshot:
    """The window as one refresh left it (immutable: scrapes and API requests read it).

    Samples are numbered; `metas` are the samples `first`, `first` + 1, ... (oldest first), and
    `runs[key]` what each partition was seen as from a sample number on (admin.group_lag.run_facts)."""

    first: int
    metas: tuple[SampleMeta, ...]
    runs: Mapping[TopicPartition, tuple[Run, ...]]
    times: tuple[int, ...]  # the samples' at_ms

    @property
    def last_meta(self) -> SampleMeta:
        return self.metas[-1]

    def latest(self, key: TopicPartition) -> Record | None:
        """What the newest sample saw of `key` (None: not in it)."""
        runs = self.runs.get(key)
        return None if runs is None else runs[-1][1]

    def facts(self, key: TopicPartition) -> PartitionFacts:
        return run_facts(self.runs[key], self.times, self.first)

    def sample(self, index: int) -> GroupSample:
        """The `index`-th sample of the window (negative: from the newest), as sampling made it."""
        index = range(len(self.metas))[index]
        number, meta = self.first + index, self.metas[index]
        partitions: dict[TopicPartition, Seen] = {}
        for key, runs in sorted(self.runs.items()):
            at = bisect.bisect_right([n for n, _ in runs], number) - 1
            record = runs[at][1] if at >= 0 else None
            if record is not None:
                partitions[key] = Seen(meta.at_ms, *record)
        return GroupSample(
            Sample(meta.at_ms, partitions, meta.members), meta.member_kinds, meta.last_commit_ms, meta.problems
        )

    def samples(self) -> tuple[GroupSample, ...]:
        return tuple(self.sample(i) for i in range(len(self.metas)))


class GroupWindow:
    """The last `max_samples` samples of one group: per sample its time and group-level facts,
    per partition a run for each change of what was seen (its time aside).

    At 1,000 groups of 100 partitions and a window of 61 samples (the CLI's defaults), a Seen per
    partition per sample (about 290 B) comes to 1.8 GB; a partition whose offset node, owner and
    log end stay put holds one run.

    Example::

        window = GroupWindow(max_samples=13)
        window.append(meta, {("t", 0): (5, (17, 1_000), 9, None, Ownership.UNOWNED)})
        facts = window.snapshot().facts(("t", 0))
    """

    def __init__(self, max_samples: int) -> None:
        self.max_samples = max_samples
        self._number = -1  # the newest sample's
        self._metas: deque[SampleMeta] = deque(maxlen=max_samples)
        self._runs: dict[TopicPartition, tuple[Run, ...]] = {}
        self._undo: dict[TopicPartition, tuple[Run, ...] | None] = {}  # runs the newest append changed

    @classmethod
    def of(cls, samples: Iterable[GroupSample], max_samples: int | None = None) -> GroupWindow:
        """A window holding these samples (tests and tools that have whole samples)."""
        listed = list(samples)
        window = cls(max_samples or max(1, len(listed)))
        for taken in listed:
            meta = SampleMeta(
                taken.sample.at_ms, taken.sample.members, taken.member_kinds, taken.last_commit_ms, taken.problems
            )
            window.append(meta, {key: seen_record(seen) for key, seen in taken.sample.partitions.items()})
        return window

    def append(self, meta: SampleMeta, records: Mapping[TopicPartition, Record]) -> None:
        """Add the newest sample (dropping the oldest past `max_samples`)."""
        self._number += 1
        number = self._number
        self._metas.append(meta)
        first = number - len(self._metas) + 1
        runs_of = self._runs
        undo: dict[TopicPartition, tuple[Run, ...] | None] = {}  # what replace_newest puts back
        for key, record in records.items():
            runs = runs_of.get(key)
            if runs is None:
                undo[key] = None
                runs_of[key] = ((number, record),)
            elif runs[-1][1] != record:
                undo[key] = runs
                runs_of[key] = _trimmed(runs, first) + ((number, record),)
            elif len(runs) > 1 and runs[1][0] <= first:
                undo[key] = runs
                runs_of[key] = _trimmed(runs, first)
        if len(runs_of) > len(records):
            for key in [k for k in runs_of if k not in records]:
                runs = undo[key] = runs_of[key]
                if runs[-1][1] is not None:
                    runs = (*runs, (number, None))
                runs = _trimmed(runs, first)
                if all(record is None for _, record in runs):
                    del runs_of[key]
                else:
                    runs_of[key] = runs
        self._undo = undo

    def replace_newest(self, meta: SampleMeta, records: Mapping[TopicPartition, Record]) -> None:
        """Put this sample in place of the newest one (none yet: append it): a refresh between two
        interval ticks (a commit's watch fired) shows the commit without shortening the window.
        The window is then exactly what it would be had the newest sample been this one all along."""
        if not self._metas:
            self.append(meta, records)
            return
        for key, runs in self._undo.items():  # the runs as they were before the newest append
            if runs is None:
                self._runs.pop(key, None)
            else:
                self._runs[key] = runs
        self._metas.pop()
        self._number -= 1
        self.append(meta, records)

    @property
    def partitions(self) -> int:
        """Partitions with runs in the window (what a tick's slice counts a group as)."""
        return len(self._runs)

    def snapshot(self) -> WindowSnapshot:
        metas = tuple(self._metas)
        return WindowSnapshot(self._number - len(metas) + 1, metas, dict(self._runs), tuple(m.at_ms for m in metas))


def _trimmed(runs: tuple[Run, ...], first: int) -> tuple[Run, ...]:
    """Without the runs that end before sample `first` (the next one starts at or before it)."""
    drop = 0
    while drop + 1 < len(runs) and runs[drop + 1][0] <= first:
        drop += 1
    return runs[drop:] if drop else runs
