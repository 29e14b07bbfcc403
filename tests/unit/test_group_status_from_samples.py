"""zkconsumer.admin's lag status and `groups status` without a cluster: samples into commits and verdicts, the report, usage."""

from __future__ import annotations

import json
import socket

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin import (
    GroupSampler,
    LagAge,
    LagStatus,
    Ownership,
    Sample,
    Seen,
    age_text,
    group_status,
    group_why,
    ownership_of,
    status_report,
)
from zkconsumer.admin.group_lag import partition_facts
from zkconsumer.cli.main import cli

T0 = 1_700_000_000_000
TP = ("orders", 0)


def seen(
    at_s: float,
    committed: int | None,
    write: int | None,
    log_end: int | None,
    *,
    mtime_s: float | None = None,
    owner: str | None = "g_a-0",
    ownership: Ownership = Ownership.OWNED,
) -> Seen:
    """One partition at T0 + at_s; `write` is the offset node's mzxid, written at mtime_s (default: at_s)."""
    at_ms = T0 + int(at_s * 1000)
    written = None if write is None else (write, T0 + int((at_s if mtime_s is None else mtime_s) * 1000))
    return Seen(at_ms, committed, written, log_end, owner, ownership)


def samples_of(*rows: Seen, members: tuple[str, ...] = ("g_a",)) -> list[Sample]:
    return [Sample(row.at_ms, {TP: row}, members) for row in rows]


def status_of(*rows: Seen) -> LagStatus:
    return group_status(samples_of(*rows)).partitions[TP].status


# ---- ownership ------------------------------------------------------------------------------------


def test_ownership_against_the_registrations() -> None:
    members = {"g_a": 0x10, "g_b": 0x11}
    assert ownership_of(None, None, members) is Ownership.UNOWNED
    assert ownership_of("g_a-0", 0x10, members) is Ownership.OWNED
    assert ownership_of("g_c-0", 0x12, members) is Ownership.OWNER_GONE
    assert ownership_of("not a thread id", 0x10, members) is Ownership.OWNER_GONE
    assert ownership_of("g_b-1", 0x10, members) is Ownership.FOREIGN_SESSION


# ---- samples into a window of commits ---------------------------------------------------------------


def test_each_new_write_of_the_offset_node_is_one_commit_with_the_lag_its_sample_saw() -> None:
    facts = partition_facts(
        [
            seen(0, 100, 7, 120, mtime_s=-30),  # written before sampling began: timed by its mtime
            seen(1, 100, 7, 125),  # the same write seen again: no commit
            seen(2, 110, 9, 130, mtime_s=1.5),
            seen(3, 110, 10, 131, mtime_s=2.5),  # rewritten, same offset: a commit (a stall, if all were so)
        ]
    )
    assert [(c.offset, c.at_ms - T0, c.lag) for c in facts.window] == [
        (100, -30_000, 20),
        (110, 1500, 20),
        (110, 2500, 21),
    ]
    assert (facts.committed, facts.log_end) == (110, 131)
    assert [end for _, end in facts.log_ends] == [120, 125, 130, 131]


def test_the_commit_standing_at_the_first_sample_counts_as_not_shrinking_to_the_next() -> None:
    # Offset 10 was committed 20 s before sampling began; the 30 the first sample shows is only an upper bound.
    rows = [seen(0, 10, 1, 40, mtime_s=-20), seen(1, 15, 2, 40), seen(2, 20, 3, 50)]
    assert [c.lag for c in partition_facts(rows).window] == [25, 25, 30]
    assert status_of(*rows) is LagStatus.WARN  # slower than the producers over what the window measured
    caught_up_then = [seen(0, 40, 1, 40, mtime_s=-20), seen(1, 45, 2, 50)]
    assert [c.lag for c in partition_facts(caught_up_then).window] == [0, 5]


def test_a_write_seen_while_no_broker_answered_is_no_commit_later_either() -> None:
    facts = partition_facts([seen(0, 100, 7, None), seen(1, 100, 7, 120)])
    assert facts.window == () and facts.log_ends == ((T0 + 1000, 120),)


writes = st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=15)


@given(writes)
def test_commits_are_the_changes_of_mzxid_seen_with_a_log_end(steps: list[tuple[int, bool]]) -> None:
    rows, mzxid = [], 1
    for i, (bump, answered) in enumerate(steps):
        mzxid += bump
        rows.append(seen(i, 100 + mzxid, mzxid, 500 if answered else None))
    changes, last = 0, None
    for row in rows:
        assert row.written is not None
        if row.written[0] != last and row.log_end is not None:
            changes += 1
        last = row.written[0]
    assert len(partition_facts(rows).window) == changes


# ---- Burrow's rules on sampled windows ------------------------------------------------------------


def test_the_five_scenarios_from_samples() -> None:
    caught_up = [seen(i, 100 + 10 * i, i + 1, 100 + 10 * i) for i in range(4)]
    assert status_of(*caught_up) is LagStatus.OK
    # The offset node never changes while the log grows: silent for longer than its one commit spans.
    stopped = [seen(i, 100, 1, 110 + i, mtime_s=-5) for i in range(4)]
    assert status_of(*stopped) is LagStatus.STOP
    stalled = [seen(i, 100, i + 1, 110 + i) for i in range(4)]  # committed each second, never further
    assert status_of(*stalled) is LagStatus.STALL
    slow = [seen(i, 100 + i, i + 1, 110 + 2 * i) for i in range(4)]
    assert status_of(*slow) is LagStatus.WARN
    rewound = [seen(0, 100, 1, 110), seen(1, 105, 2, 112), seen(2, 50, 3, 114)]
    assert status_of(*rewound) is LagStatus.REWIND


@given(st.integers(2, 12), st.integers(1, 50), st.integers(0, 100_000))
def test_an_offset_node_never_written_while_messages_wait_is_stop(n: int, lag: int, before_ms: int) -> None:
    rows = [seen(i, 100, 1, 100 + lag + i, mtime_s=-before_ms / 1000) for i in range(n)]
    assert status_of(*rows) is LagStatus.STOP


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 5)), min_size=2, max_size=10),
    st.integers(-(10**9), 10**9),
)
def test_verdicts_depend_on_time_only_through_differences(steps: list[tuple[int, int, int]], shift_ms: int) -> None:
    rows, offset, end, mzxid = [], 100, 110, 1
    for i, (advance, grow, bump) in enumerate(steps):
        offset, end, mzxid = offset + advance, end + grow, mzxid + (1 if bump else 0)
        rows.append(seen(i, offset, mzxid, max(end, offset)))
    moved = [
        Seen(
            r.at_ms + shift_ms,
            r.committed,
            None if r.written is None else (r.written[0], r.written[1] + shift_ms),
            r.log_end,
            r.owner,
            r.ownership,
        )
        for r in rows
    ]
    assert group_status(samples_of(*moved)).partitions[TP] == group_status(samples_of(*rows)).partitions[TP]


@given(st.integers(0, 100), st.integers(0, 100), st.sampled_from(list(Ownership)))
def test_one_sample_judges_ownership_and_lag_only(committed: int, log_end: int, ownership: Ownership) -> None:
    owner = None if ownership is Ownership.UNOWNED else "g_a-0"
    verdict = group_status(samples_of(seen(0, committed, 1, log_end, mtime_s=-600, owner=owner, ownership=ownership)))
    partition = verdict.partitions[TP]
    if ownership is Ownership.OWNED and committed > log_end:
        assert partition.status is LagStatus.WARN and "past the log end" in partition.reason  # out of range
    elif ownership is Ownership.OWNED:
        assert partition.status is LagStatus.OK  # an old commit and lag: no STOP from one look
        assert ("messages wait" in partition.reason) == (log_end > committed)
    else:
        assert partition.status in (LagStatus.WARN, LagStatus.ERR)
    assert partition.age is None or partition.age.seconds == 0.0


def test_members_owning_nothing_beside_an_unowned_partition_make_the_group_err() -> None:
    rows = {
        ("t", 0): seen(0, 10, 1, 10, owner="g_a-0"),
        ("t", 1): seen(0, 10, 2, 10, owner=None, ownership=Ownership.UNOWNED),
    }
    verdict = group_status([Sample(T0, rows, ("g_a", "g_b"))])
    assert verdict.status is LagStatus.ERR
    assert group_why(verdict).startswith("1 registered members own nothing (g_b) while t-1 have no owner")


# ---- the report ------------------------------------------------------------------------------------------


def test_the_json_report_keys_and_the_cap_at_err() -> None:
    samples = samples_of(*[seen(i, 100, 1, 110 + i, mtime_s=-5) for i in range(3)])
    verdict = group_status(samples)
    doc = json.loads(json.dumps(status_report("g", verdict, samples, interval_s=1.0)))
    assert list(doc) == [
        "group", "status", "why", "reasons", "judged", "samples", "window_s", "interval_s",
        "total_lag", "members", "idle_members", "partitions",
    ]  # fmt: skip
    assert (doc["status"], doc["judged"], doc["samples"], doc["window_s"], doc["total_lag"]) == (
        "ERR",
        True,
        3,
        2.0,
        12,
    )
    assert doc["why"] == "1 STOP (orders-0); a group is at worst ERR, as in Burrow"
    (row,) = doc["partitions"]
    assert list(row) == [
        "topic", "partition", "status", "reason", "current_offset", "log_end_offset", "lag",
        "lag_seconds", "owner", "ownership", "commits_seen",
    ]  # fmt: skip
    assert (row["status"], row["lag"], row["ownership"], row["commits_seen"]) == ("STOP", 12, "owned", 1)
    assert row["lag_seconds"] == {"seconds": 2.0, "at_least": True, "within_s": 0.0}


def test_lag_seconds_as_text() -> None:
    assert age_text(None) is None
    assert age_text(LagAge(0.0, False, 0.0)) == "0"
    assert age_text(LagAge(12.0, False, 1.0)) == "12-13"
    assert age_text(LagAge(30.0, True, 0.0)) == ">=30"


# ---- the sampler's schedule, and usage --------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_watch_samples_now_and_every_interval_until_the_window_is_over() -> None:
    clock = Clock()
    taken: list[float] = []

    class Counting(GroupSampler):
        def sample(self) -> Sample:
            taken.append(clock.now)
            clock.now += 0.25  # each read takes a while: the next waits less
            return Sample(0, {}, ())

    Counting(None, "g", None, monotonic=lambda: clock.now, sleep=clock.sleep).watch(3.0, 1.0)
    assert taken == [0.0, 1.0, 2.0, 3.0] and clock.slept == [0.75, 0.75, 0.75]


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(
        cli, list(args), env={"ZKCONSUMER_ZOOKEEPER": None, **(env or {})}, catch_exceptions=False
    )


def test_help_usage_errors_and_an_unreachable_zookeeper() -> None:
    helped = invoke("groups", "status", "--help")
    assert helped.exit_code == 0
    for text in ("--zookeeper", "--watch", "--interval", "--json", "Example", "Exit status"):
        assert text in helped.stdout
    assert "groups status" in invoke("--help").stdout
    short = invoke("groups", "status", "--zookeeper", "z:1", "-g", "g", "--watch", "1", "--interval", "2")
    assert short.exit_code == 2 and "--watch 1 is shorter than --interval 2" in short.stderr
    assert invoke("groups", "status", "--zookeeper", "z:1").exit_code == 2  # no --group
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = invoke(
        "groups", "status", "-g", "g", "--zk-timeout", "0.5", env={"ZKCONSUMER_ZOOKEEPER": f"127.0.0.1:{port}/kafka"}
    )
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == f"zkconsumer: error: ZooKeeper unreachable at 127.0.0.1:{port}/kafka after 0.5 s\n"
