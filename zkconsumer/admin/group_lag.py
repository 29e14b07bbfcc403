"""A group's lag status from samples of it (pure): what a sampler saw of each partition, into verdicts and a report.

A sample sees each partition's committed offset and its offset node's last write (mzxid, mtime),
the log end the brokers gave, and the owner node. Over a window of samples, every new mzxid of an
offset node is one commit, timed by its mtime (ZooKeeper's clock, as Burrow's `kafka_zk` module
times it) and with the lag of the sample that first saw it (Burrow: the broker offset it knew when
it read the node); those commits are the window Burrow's rules judge. With one sample there is no
window: the verdict is the owner nodes' and the lag now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from zkconsumer.admin.verdicts import (
    Commit,
    GroupVerdict,
    LagAge,
    LagStatus,
    Ownership,
    PartitionFacts,
    PartitionVerdict,
    group_verdict,
    partition_verdict,
)
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper import znodes

# The report's `ownership` values, stable names of verdicts.Ownership.
OWNERSHIP_NAMES = {
    Ownership.OWNED: "owned",
    Ownership.UNOWNED: "unowned",
    Ownership.OWNER_GONE: "owner-gone",
    Ownership.FOREIGN_SESSION: "foreign-session",
    Ownership.UNSUBSCRIBED: "unsubscribed",
}


@dataclass(frozen=True, slots=True)
class Seen:
    """One partition in one sample."""

    at_ms: int  # when the sample was taken (the sampler's clock)
    committed: int | None  # None: no offset node
    written: tuple[int, int] | None  # the offset node's (mzxid, mtime ms); None without a node
    log_end: int | None  # None: no broker answered
    owner: str | None  # the owner node's thread id
    ownership: Ownership
    log_start: int | None = None  # None: not read (the exporter reads log ends only)


@dataclass(frozen=True, slots=True)
class Sample:
    """One look at the group: every partition of interest, and the registered members."""

    at_ms: int
    partitions: Mapping[TopicPartition, Seen]
    members: tuple[str, ...]


def ownership_of(
    owner: str | None, owner_session: int | None, member_sessions: Mapping[str, int], subscribed: bool = True
) -> Ownership:
    """What an owner node says, against the registered members (consumer id -> registration's session).

    `subscribed`: whether a registered member subscribes to the partition's topic. A partition
    without owner whose topic nobody subscribes to while members are registered is UNSUBSCRIBED
    (a retired topic's offsets); with no member at all it stays UNOWNED (the group stopped)."""
    if owner is None:
        return Ownership.UNSUBSCRIBED if member_sessions and not subscribed else Ownership.UNOWNED
    try:
        consumer_id = znodes.consumer_id_of_thread(owner)
    except ValueError:
        return Ownership.OWNER_GONE  # no thread id: no registered member can be its owner
    if consumer_id not in member_sessions:
        return Ownership.OWNER_GONE
    if owner_session is not None and owner_session != member_sessions[consumer_id]:
        return Ownership.FOREIGN_SESSION
    return Ownership.OWNED


def partition_facts(seen: Sequence[Seen]) -> PartitionFacts:
    """The commits a partition's samples show (oldest first), its state in the last, its log ends.

    A write seen while no broker answered is no commit of the window (Burrow drops a commit whose
    lag it cannot compute, and reads the node again only when it changes). The commit standing at
    the first sample was made before it, however long: its lag then is at most what that sample
    shows, so it is taken as not shrinking to the next commit's (0 stays 0: caught up then too)."""
    commits: list[Commit] = []
    last_write: int | None = None
    standing = seen[0].written[0] if seen[0].written is not None else None
    first_write: int | None = None
    for s in seen:
        if s.written is None or s.committed is None or s.written[0] == last_write:
            continue
        last_write = s.written[0]
        if s.log_end is not None:
            commits.append(Commit(s.committed, s.written[1], max(0, s.log_end - s.committed)))
            first_write = s.written[0] if first_write is None else first_write
    if len(commits) > 1 and first_write == standing:
        commits[0] = replace(commits[0], lag=min(commits[0].lag, commits[1].lag))
    last = seen[-1]
    return PartitionFacts(
        window=tuple(commits),
        committed=last.committed,
        log_end=last.log_end,
        log_ends=tuple((s.at_ms, s.log_end) for s in seen if s.log_end is not None),
        owner=last.owner,
        ownership=last.ownership,
        log_start=last.log_start,
    )


Record = tuple[int | None, tuple[int, int] | None, int | None, str | None, Ownership]
"""A Seen without its time: (committed, written, log_end, owner, ownership)."""
Run = tuple[int, Record | None]
"""From this sample number on (until the next run), the partition was seen so (None: absent)."""


def seen_record(seen: Seen) -> Record:
    return (seen.committed, seen.written, seen.log_end, seen.owner, seen.ownership)


def run_facts(runs: Sequence[Run], times: Sequence[int], first: int) -> PartitionFacts:
    """partition_facts of the samples numbered first .. first + len(times) - 1 (taken at `times`)
    when the partition was seen as `runs` say: each run holds from its number to the next run's,
    the last to the last sample; runs before `first` are out of the window.

    Equal to partition_facts of the expanded samples but for `log_ends`, which keeps only each
    run's first and last sample: lag_age reads the same answer from it (the first sample past the
    committed offset opens a run, the sample before it closes the previous one)."""
    last_number = first + len(times) - 1
    spans: list[tuple[int, int, Record]] = []
    for i, (number, record) in enumerate(runs):
        end = runs[i + 1][0] - 1 if i + 1 < len(runs) else last_number
        start = max(number, first)
        if record is not None and start <= end:
            spans.append((start, end, record))
    if not spans:
        raise ValueError("the partition is in no sample of the window")
    commits: list[Commit] = []
    ends: list[tuple[int, int]] = []
    last_write: int | None = None
    first_written = spans[0][2][1]
    standing = first_written[0] if first_written is not None else None
    first_write: int | None = None
    for start, end, (committed, written, log_end, _owner, _ownership) in spans:
        if log_end is not None:
            ends.append((times[start - first], log_end))
            if end > start:
                ends.append((times[end - first], log_end))
        if written is None or committed is None or written[0] == last_write:
            continue
        last_write = written[0]
        if log_end is not None:
            commits.append(Commit(committed, written[1], max(0, log_end - committed)))
            first_write = written[0] if first_write is None else first_write
    if len(commits) > 1 and first_write == standing:
        commits[0] = replace(commits[0], lag=min(commits[0].lag, commits[1].lag))
    committed, _written, log_end, owner, ownership = spans[-1][2]
    return PartitionFacts(tuple(commits), committed, log_end, tuple(ends), owner, ownership)


def group_status(samples: Sequence[Sample]) -> GroupVerdict:
    """The group's verdict from its samples, oldest first: Burrow's rules over the window when
    there are two samples or more, the owner nodes and the lag now from one."""
    if not samples:
        raise ValueError("no sample of the group")
    last = samples[-1]
    facts = {
        key: partition_facts([s.partitions[key] for s in samples if key in s.partitions]) for key in last.partitions
    }
    return judge_group(facts, len(samples) > 1, last.members, last.at_ms)


def judge_group(
    facts: Mapping[TopicPartition, PartitionFacts], judged: bool, members: Sequence[str], now_ms: int
) -> GroupVerdict:
    """The verdict of a group whose partitions in the last sample have these facts: Burrow's rules
    when `judged` (two samples or more), the owner nodes and the lag now otherwise."""
    verdicts: dict[TopicPartition, PartitionVerdict] = {}
    for key in sorted(facts):
        verdicts[key] = judge_partition(facts[key], judged, now_ms)
    owning = {_consumer_id(f.owner) for f in facts.values() if f.ownership is Ownership.OWNED}
    return group_verdict(verdicts, members, {cid for cid in owning if cid is not None})


Judged = tuple[Mapping[TopicPartition, tuple[Run, ...]], bool, Mapping[TopicPartition, PartitionVerdict]]
"""A group's runs when it was last judged, whether that window was judged (two samples or more),
and the verdicts: what the window and the verdict already hold, nothing per partition of its own."""

NOT_JUDGED: Judged = ({}, False, {})


def judge_runs(
    runs_of: Mapping[TopicPartition, tuple[Run, ...]],
    times: Sequence[int],
    first: int,
    members: Sequence[str],
    previous: Judged = NOT_JUDGED,
) -> tuple[GroupVerdict, Judged]:
    """judge_group of a window kept as runs (run_facts; now is the last sample's time), and what
    to pass as `previous` next time (`runs_of` is kept in it: it must not change afterwards).

    A partition is judged again only when its runs changed or its verdict could change with time
    alone: one run (the same thing seen all window long) with no message waiting or no log end
    known has the same commits, lag and age (0 or none) at any time and wherever the window
    starts; Burrow's STOP and the lag in seconds need waiting messages. Of one run with messages
    waiting and no owner (or one that is not a member), only the age moves: it counts from the
    run's first sample in the window, a lower bound (lag_age of a log end that never moved)."""
    judged = len(times) > 1
    now_ms = times[-1]
    verdicts: dict[TopicPartition, PartitionVerdict] = {}
    owning: set[str] = set()
    was_runs, was_judged, was_verdicts = previous
    for key in sorted(k for k, runs in runs_of.items() if runs[-1][1] is not None):
        runs = runs_of[key]
        was = was_verdicts.get(key) if was_runs.get(key) is runs else None
        if was is not None and was_judged == judged and len(runs) == 1 and not was.lag:
            verdict = was
        elif was is not None and judged and len(runs) == 1 and _only_age_moves(was):
            # Nobody owns it (or not a member): status and reason are the lag's and the owner's;
            # the first waiting message has waited since the run's first sample in the window.
            since = times[max(runs[0][0], first) - first]
            age = LagAge(max(0.0, (now_ms - since) / 1000.0), True, 0.0)
            verdict = PartitionVerdict(was.status, was.why, was.lag, age, was.ownership, was.unseen)
        else:
            verdict = judge_partition(run_facts(runs, times, first), judged, now_ms)
        verdicts[key] = verdict
        record = runs[-1][1]
        if verdict.ownership is Ownership.OWNED and record is not None:
            cid = _consumer_id(record[3])
            if cid is not None:
                owning.add(cid)
    group = group_verdict(verdicts, members, owning)
    return group, (runs_of, judged, group.partitions)


def _only_age_moves(verdict: PartitionVerdict) -> bool:
    return verdict.ownership is not Ownership.OWNED and verdict.age is not None and verdict.age.at_least


def judge_partition(facts: PartitionFacts, judged: bool, now_ms: int) -> PartitionVerdict:
    """One partition's verdict as judge_group gives it."""
    if judged:
        return partition_verdict(facts, now_ms)
    return _one_sample(partition_verdict(replace(facts, window=()), now_ms))


def _one_sample(verdict: PartitionVerdict) -> PartitionVerdict:
    """Without a window nothing says whether waiting messages are being consumed, nor for how long
    they have waited (lag_age of one sample is "at least 0 s")."""
    if verdict.status is LagStatus.OK and verdict.lag:
        reason = f"owned; {verdict.lag} messages wait (--watch judges whether they are being consumed)"
        return replace(verdict, why=reason, age=None)
    if verdict.lag:
        return replace(verdict, age=None)
    return verdict


def _consumer_id(thread_id: str | None) -> str | None:
    try:
        return None if thread_id is None else znodes.consumer_id_of_thread(thread_id)
    except ValueError:
        return None


def group_why(verdict: GroupVerdict) -> str:
    """One line: the group-level reasons first, then which partitions have which status."""
    by_status: dict[LagStatus, list[TopicPartition]] = {}
    for key, v in verdict.partitions.items():
        by_status.setdefault(v.status, []).append(key)
    flagged = sum(len(keys) for status, keys in by_status.items() if status not in (LagStatus.OK, LagStatus.NOTFOUND))
    group_level = list(verdict.reasons[: len(verdict.reasons) - flagged])
    if not verdict.partitions:
        return "no partitions: the group has no offsets, owners or subscriptions"
    counts = [
        f"{len(keys)} {status.name} ({partitions_text(keys)})"
        for status, keys in sorted(by_status.items(), reverse=True)
        if status is not LagStatus.OK
    ]
    ok = len(by_status.get(LagStatus.OK, []))
    if not counts:
        return f"all {ok} partitions OK"
    capped = ["a group is at worst ERR, as in Burrow"] if max(by_status) > LagStatus.ERR else []
    return "; ".join(group_level + counts + ([f"{ok} OK"] if ok else []) + capped)


def age_text(age: LagAge | None) -> str | None:
    """How long the first waiting message has waited: "12-13" (seconds, exact to the sampling
    interval), ">=30" (it was waiting when sampling began), None when unknown."""
    if age is None:
        return None
    if age.at_least:
        return f">={age.seconds:.0f}"
    if age.within_s == 0:
        return f"{age.seconds:.0f}"
    return f"{age.seconds:.0f}-{age.seconds + age.within_s:.0f}"


def status_report(
    group: str, verdict: GroupVerdict, samples: Sequence[Sample], *, interval_s: float | None
) -> dict[str, Any]:
    """The --json document (docs/cli.md, "groups status", lists its keys)."""
    last = samples[-1]
    owning = {_consumer_id(s.owner) for s in last.partitions.values() if s.ownership is Ownership.OWNED}
    return {
        "group": group,
        "status": verdict.status.name,
        "why": group_why(verdict),
        "reasons": list(verdict.reasons),
        "judged": len(samples) > 1,
        "samples": len(samples),
        "window_s": (last.at_ms - samples[0].at_ms) / 1000.0,
        "interval_s": interval_s,
        "total_lag": verdict.total_lag,
        "members": list(last.members),
        "idle_members": sorted(set(last.members) - owning),
        "partitions": [_partition(key, v, samples) for key, v in sorted(verdict.partitions.items())],
    }


def _partition(key: TopicPartition, verdict: PartitionVerdict, samples: Sequence[Sample]) -> dict[str, Any]:
    seen = [s.partitions[key] for s in samples if key in s.partitions]
    age = verdict.age
    return {
        "topic": key[0],
        "partition": key[1],
        "status": verdict.status.name,
        "reason": verdict.reason,
        "current_offset": seen[-1].committed,
        "log_end_offset": seen[-1].log_end,
        "lag": verdict.lag,
        "lag_seconds": None
        if age is None
        else {"seconds": age.seconds, "at_least": age.at_least, "within_s": age.within_s},
        "owner": seen[-1].owner,
        "ownership": OWNERSHIP_NAMES[verdict.ownership],
        "commits_seen": len(partition_facts(seen).window),
    }
