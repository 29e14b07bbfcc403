"""The live switch's faults (issue #54, item 3) on a real 3-broker cluster: nothing lost, no offset delivered by two members at once, and a state `migrate plan` names from which `migrate switch` completes.

Each test runs a small group (3 member processes on the ConsumerConnector API, 4 to 8 partitions,
100 msg/s; tests/harness/switch_run.py's AuditRun) through `migrate switch --to broker` and back, with
independent faults in one switch: the brokers' group leader killed -9 at `handover` and another
member's ZooKeeper session expired, then the group coordinator moved on the way back; the switch
command killed -9 half-way while partitions are added, run again, then a member killed -9 on the
way back; a topic the members' wildcard subscription matches created at `handover`.
scripts/bench/live_switch.py measures the same faults at 6 members, 24 partitions, 2,000 msg/s
(docs/migration.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.switch_audit import Figures
from harness.switch_paths import Settings, switch, switch_plan
from harness.switch_run import AuditRun
from zkconsumer.migration import SWITCH_REFUSALS, SWITCH_STEPS
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.probes import ClusterStartError

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]

MEMBERS, PARTITIONS, RATE = 3, 6, 100.0
COMMIT_S = 1.0  # harness.switch_member's auto.commit.interval.ms
SETTINGS = Settings(
    members=MEMBERS,
    warm=2.0,
    hold=1.0,
    fault_delay=1.0,
    added_partitions=2,
    switch_timeout=90.0,
    member_props={"rebalance.backoff.ms": 500, "zookeeper.session.timeout.ms": 6000},
)


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three brokers, __consumer_offsets replicated 3 times, so the group's coordinator can move."""
    cluster = LocalCluster(
        brokers=3, chroot="/switchfaults", workdir=tmp_path_factory.mktemp("switch-faults"), replication_factor=3
    )
    try:
        cluster.start()
    except ClusterStartError as exc:
        pytest.fail(f"3-broker cluster did not start:\n{exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def _judge(run: AuditRun, victims: set[str]) -> Figures:
    """Nothing lost, no overlap; duplicates only of a killed or expired member's uncommitted window."""
    figures = run.figures()
    tails = "\n".join(f"--- {m.name}\n{m.log_tail(15)}" for m in run.retired + run.members)
    notes = "\n".join(f"{at - run.start_at:8.3f}s {what}" for at, what in run.notes)
    assert figures.acked > RATE * 5, figures
    assert figures.lost == 0, f"{figures}\n{notes}\n{tails}"
    assert figures.overlap == 0 and not figures.overlap_spans, f"{figures.overlap_spans[:5]}\n{notes}"
    # a dead member's last commit interval of its partitions, delivered again by their next owner (or
    # an expired member's, by itself): at most a commit interval and a commit's delay of traffic
    assert figures.duplicates <= RATE * (COMMIT_S + 2.0) * len(victims), figures
    for ds in figures.duplicate_examples:
        assert ds[0].member in victims, ds
    return figures


def _assert_named(plan: dict[str, object], step: str | None = None) -> None:
    """A state `migrate plan` names: a known step, and nothing that refuses the next one."""
    assert plan.get("step") in SWITCH_STEPS, plan
    if step is not None:
        assert plan["step"] == step, plan
    blockers = plan.get("blockers") or []
    assert isinstance(blockers, list)
    assert not [b for b in blockers if b["code"] in SWITCH_REFUSALS], plan


def test_the_leaders_kill_and_an_expiry_at_handover_then_the_coordinator_moving_on_the_way_back(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    run = AuditRun(cluster3, tmp_path, name="leader", partitions=PARTITIONS, rate=RATE, replication_factor=3)
    run.member_args = ["--log-group-leader"]  # to find the brokers' group leader in the members' logs
    try:
        run.start_members(MEMBERS, SETTINGS.member_props, "zk")
        run.begin()
        time.sleep(SETTINGS.warm)
        switch(run, "broker", SETTINGS, ["kill-leader", "expire"])
        _assert_named(switch_plan(run), "broker")
        time.sleep(SETTINGS.hold)
        for plan in switch(run, "zookeeper", SETTINGS, ["coordinator"]):  # a plan read after each crash, if any
            _assert_named(plan)
        assert switch_plan(run) == {}  # back on ZooKeeper: the node is gone, as if never switched
        time.sleep(SETTINGS.hold)
        run.end(drain_timeout=30)
    finally:
        run.close()
    killed = [what for _, what in run.notes if "the brokers' group leader" in what]
    assert len(killed) == 1, run.notes
    victims = {m.name for m in run.retired} | {n for _, what in run.notes for n in _expired(what)}
    _judge(run, victims)


def test_the_command_killed_half_way_while_partitions_are_added_runs_again_then_a_member_dies_on_the_way_back(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    run = AuditRun(cluster3, tmp_path, name="rerun", partitions=PARTITIONS, rate=RATE, replication_factor=3)
    try:
        run.start_members(MEMBERS, SETTINGS.member_props, "zk")
        run.begin()
        time.sleep(SETTINGS.warm)
        after_kill, *_ = switch(run, "broker", SETTINGS, ["add-partitions", "kill-switch"])
        _assert_named(after_kill)
        assert after_kill["step"] in ("joining", "handover"), after_kill  # killed half-way
        _assert_named(switch_plan(run), "broker")
        time.sleep(SETTINGS.hold)
        switch(run, "zookeeper", SETTINGS, ["kill"])
        assert switch_plan(run) == {}
        time.sleep(SETTINGS.hold)
        run.end(drain_timeout=30)
    finally:
        run.close()
    assert run.partitions == PARTITIONS + SETTINGS.added_partitions
    figures = _judge(run, {m.name for m in run.retired})
    delivered = {d.partition for d in run.deliveries() if d.at > run.start_at}
    assert delivered == set(range(run.partitions)), (delivered, figures)  # the added ones too


def _expired(note: str) -> list[str]:
    prefix = "expired the ZooKeeper session of "
    return [note.removeprefix(prefix)] if note.startswith(prefix) else []


def test_a_topic_the_wildcard_matches_created_at_handover_has_one_deliverer_at_broker_and_loses_nothing(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    run = AuditRun(cluster3, tmp_path, name="wild", partitions=4, rate=RATE, replication_factor=3)
    run.member_args, run.subscription = ["--whitelist"], f"{run.topic}.*"
    at_broker: dict[int, set[str]] = {}
    try:
        run.start_members(MEMBERS, SETTINGS.member_props, "zk")
        run.begin()
        time.sleep(SETTINGS.warm)
        switch(run, "broker", SETTINGS, ["add-topic"])
        new = f"{run.topic}-new"
        # At `broker` the brokers decide: the new topic must be delivered there, not only after a way back.
        deadline = time.monotonic() + 30
        while True:
            acked = set(run.added_topics.get(new, ()))
            missing = acked - {d.key for d in run.deliveries(new)}
            if (acked and not missing) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert acked and not missing, f"{len(missing)} of {len(acked)} messages of {new} undelivered at broker"
        for d in run.deliveries(new):
            at_broker.setdefault(d.partition, set()).add(d.member)
        _assert_named(switch_plan(run), "broker")
        switch(run, "zookeeper", SETTINGS)
        time.sleep(SETTINGS.hold)
        run.end(drain_timeout=30)
    finally:
        run.close()
    assert sorted(at_broker) == list(range(SETTINGS.added_partitions)), at_broker
    assert all(len(members) == 1 for members in at_broker.values()), at_broker  # one deliverer each
    added = run.figures(new)
    assert added.lost == 0 and added.overlap == 0 and added.duplicates == 0, added
    _judge(run, set())
