"""Regression (review of issue #42, finding F1): a doubt heard between a claim and its install.

docs/design.md: "a doubt heard between a claim and its install installs the partition stopped"
(`Assignment.install` sets `info.active = key not in doubted`). But `ClaimStep._start` hands the new
records, active, to the fetcher (`fetcher.add` / `assign`) before it installs them; from then on a
reader may fetch and deliver them (a reader's own fetch, or the fetcher thread's), and nothing but
`info.active` and the gate stands in the way: a doubt recorded for a key that is not installed yet
reaches no record. So the partition is delivered between `fetcher.add` and `install`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import SimMember
from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.zookeeper import znodes

KEY = (TOPIC, 0)


def test_a_partition_put_in_doubt_before_its_install_is_not_delivered_meanwhile() -> None:
    """Failed on 9a44e14 (finding F1). m1 claims t-0 and t-1; while its listener's
    before_starting_fetchers runs, a stale Scala member deletes t-0's owner node and another
    claimant creates it; m1's watch fires (t-0 is in doubt, not installed yet). Then `_start` adds
    the still-active records to the fetcher, and a reader delivers t-0 before `install` stops it:
    here the reader takes its turn right after `fetcher.add` returns (a thread switch on the
    rebalance thread between two statements)."""
    s = Schedule(0, Options(members=0, partitions=2))
    s.log.produce(KEY, 5)
    m1 = s.add_member()
    path = znodes.owner_path(GROUP, *KEY)
    raced: list[str] = []

    def pause(m: SimMember, where: str) -> None:
        if where == "before_starting_fetchers" and not raced:
            raced.append(where)
            s.admin.delete(path)  # blind, as a Scala member with a stale topic registry does
            scala = s.model.client("scala")
            scala.start()
            scala.create(path, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)
            s.model.deliver(m.client)  # m1's watch on the node it just created fires: doubt

    m1.pause = pause
    add = m1.fetcher.add

    def add_then_a_reader_runs(infos: Sequence[PartitionTopicInfo]) -> None:
        add(infos)
        if raced:
            m1.consume(10)  # a reader's fetch and delivery, before the rebalance thread's next statement

    m1.fetcher.add = add_then_a_reader_runs  # type: ignore[method-assign]
    s.model.advance(ROUND_MS)
    m1.rebalance()
    assert raced, "the claim never reached its listener"
    assert m1.assignment.doubted() == [KEY]  # installed stopped, as the design says...
    delivered = [d.offset for d in s.deliveries if d.key == KEY]
    assert not s.result.violations and delivered == [], (
        f"...but t-0 was delivered ({delivered}) before the install stopped it: {s.result.violations[:1]}"
    )
