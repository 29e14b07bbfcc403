"""`groups rebalance` on a mixed group whose Scala member (1.1.1, 0.8.2.2) gave up: every partition owned again, no member restarted."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from kazoo.protocol.states import EventType, WatchedEvent

from harness.members import expected_assignment, owner_table
from harness.scala import COMPAT_VERSION
from zkconsumer.cli.main import cli
from zkconsumer.testing.kafka import add_partitions
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.nudge import nudge_children

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

RECORD = Path(os.environ.get("ZKCONSUMER_INTEROP_RECORD", "/tmp/zkconsumer-interop-convergence.jsonl"))
GAVE_UP = "can't rebalance after 2 retries"  # ConsumerRebalanceFailedException, logged by the watcher thread


def rebalance(zookeeper: str, group: str, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["groups", "rebalance", "--zookeeper", zookeeper, "--group", group, *args], catch_exceptions=False
    )


def ids_facts(zk, group: str) -> tuple[int, int, dict[str, int]]:  # type: ignore[no-untyped-def]
    """The ids folder's cversion and pzxid, and each member's session: any write or re-registration moves one."""
    stat = zk.exists(znodes.ids_path(group))
    members = zk.get_children(znodes.ids_path(group))
    sessions = {cid: zk.exists(znodes.member_path(group, cid)).ephemeralOwner for cid in members}
    return stat.cversion, stat.pzxid, sessions


def wait_until(what: str, check, timeout: float = 60.0, logs: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s\n{logs}")
        time.sleep(0.1)


def test_the_nudge_fires_the_child_watch_and_leaves_the_children_as_they_were(zk, group_id: str) -> None:
    ids = znodes.ids_path(group_id)
    zk.ensure_path(ids)
    zk.create(f"{ids}/{group_id}_m", b"{}", ephemeral=True)
    fired: list[WatchedEvent] = []
    seen = threading.Event()
    zk.get_children(ids, watch=lambda event: (fired.append(event), seen.set()))
    before = zk.exists(ids)
    stat = nudge_children(ZkIO(zk, 10.0), ids, f"{group_id}_nudge", b"{}")
    assert seen.wait(10), "the child watch did not fire"
    assert [e.type for e in fired] == [EventType.CHILD]
    assert zk.get_children(ids) == [f"{group_id}_m"]  # the child came and went in one transaction
    assert stat.cversion == before.cversion + 2 and stat.pzxid > before.pzxid


def test_unknown_group_is_refused_naming_the_node(cluster) -> None:  # type: ignore[no-untyped-def]
    result = rebalance(cluster.zookeeper_connect, "no-such-group", "--execute")
    assert result.exit_code == 1
    assert result.stderr == (
        f"zkconsumer: error: unknown group 'no-such-group': no /consumers/no-such-group in ZooKeeper at "
        f"{cluster.zookeeper_connect}\n"
    )


@pytest.mark.parametrize("release", ["1.1.1", "0.8.2.2"])
def test_a_scala_member_that_gave_up_owns_again_after_the_nudge_without_a_restart(  # type: ignore[no-untyped-def]
    release: str, mixed, cluster, zk, topic_factory
) -> None:
    topic, g = topic_factory(partitions=6), mixed.group
    # c-scala sorts last, so the partitions it takes at each join are ones it held: its two tries
    # never meet a peer's node there, only at the growth below.
    mixed.add_scala("c-scala", {topic: 1}, release=release, rebalance_max_retries=2, rebalance_backoff_ms=200)
    mixed.scala["c-scala"].wait_ready()
    mixed.add_scala("a-scala", {topic: 1}, release=release)
    mixed.scala["a-scala"].wait_ready()
    mixed.add_py("b-py", {topic: 1}, zkconsumer_compat_version=COMPAT_VERSION[release])
    mixed.balanced([topic])
    pids = {name: m.process.pid for name, m in mixed.scala.items()}

    # An owner node of partition 6 held by a session of no member (the test's own client), then the
    # topic grows to 8: range gives c-scala 6 and 7, its claim of 6 fails twice and it gives up.
    intruder = cluster.zk_client()
    intruder.create(znodes.owner_path(g, topic, 6), b"intruder-0", ephemeral=True)
    add_partitions(cluster.bootstrap_servers, topic, 8)
    c_scala = mixed.scala["c-scala"]
    wait_until("c-scala gave up", lambda: GAVE_UP in c_scala.log_tail(100000), logs=mixed.log_tails())
    wait_until(
        "a-scala and b-py own 0-5",
        lambda: set(owner_table(zk, g, [topic])) == {(topic, p) for p in range(7)},
        logs=mixed.log_tails(),
    )
    facts = ids_facts(zk, g)

    refused = rebalance(cluster.zookeeper_connect, g, "--execute")
    assert refused.exit_code == 1, refused.output
    session = intruder.client_id[0]
    assert (
        f"zkconsumer: error: /consumers/{g}/owners/{topic}/6: owned by intruder-0, no registered member, in "
        f"session 0x{session:x}; the member assigned {topic}-6 cannot claim it; not deleted (a live session "
        f"holds it): stop the process of session 0x{session:x}, or wait until ZooKeeper expires that session, "
        "then run this again\n"
    ) in refused.stderr
    assert "blockers (listed above) would make its members' rebalance fail again; nothing was written" in refused.stderr
    assert ids_facts(zk, g) == facts

    intruder.stop()  # its session ends: the node goes, and nothing tells c-scala
    intruder.close()
    stuck_until = time.monotonic() + 3.0
    while time.monotonic() < stuck_until:  # the stuck state: two partitions nobody owns, members idle
        assert set(owner_table(zk, g, [topic])) == {(topic, p) for p in range(6)}
        time.sleep(0.2)

    planned = rebalance(cluster.zookeeper_connect, g)
    assert planned.exit_code == 0, planned.output
    assert f"No owner: {topic}-6, {topic}-7\nOwning nothing: {g}_c-scala\n" in planned.stdout
    assert f"would nudge /consumers/{g}/ids: create and delete one child in one transaction\n" in planned.stdout
    assert planned.stderr == "Nothing was written. Re-run with --execute to make every member rebalance.\n"
    as_json = json.loads(rebalance(cluster.zookeeper_connect, g, "--json").stdout)
    assert as_json["result"] is None and as_json["plan"]["unowned"] == [f"{topic}-6", f"{topic}-7"]
    assert as_json["plan"]["idle_members"] == [f"{g}_c-scala"] and as_json["plan"]["blockers"] == []
    assert ids_facts(zk, g) == facts  # the dry runs wrote nothing
    assert set(owner_table(zk, g, [topic])) == {(topic, p) for p in range(6)}

    began = time.monotonic()
    done = rebalance(cluster.zookeeper_connect, g, "--execute", "--timeout", "60")
    command_s = time.monotonic() - began
    assert done.exit_code == 0, done.output + mixed.log_tails()
    owned_after = float(re.search(r"every partition has an owner ([0-9.]+) s after the nudge", done.stdout)[1])
    assert owner_table(zk, g, [topic]) == expected_assignment(zk, g)  # 0-2 a, 3-5 b, 6-7 c
    assert {p for (_, p), thread in owner_table(zk, g, [topic]).items() if thread == f"{g}_c-scala-0"} == {6, 7}
    assert f"{g}_c-scala" in re.search(r"owner nodes created since the nudge: (.*)", done.stdout)[1]
    # No member restarted: the same JVMs, and every registration still held by the session that made it.
    assert {name: m.process.pid for name, m in mixed.scala.items()} == pids
    assert all(m.running for m in mixed.scala.values())
    assert ids_facts(zk, g)[2] == facts[2]
    print(f"\n{refused.output}{planned.output}{done.output}")
    print(f"un-stick ({release}): every partition owned {owned_after:.2f} s after the nudge; command {command_s:.2f} s")
    with RECORD.open("a") as out:
        out.write(
            json.dumps(
                {
                    "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "case": f"unstick-scala-{release}-gave-up",
                    "owned_after_s": owned_after,
                    "command_s": round(command_s, 3),
                }
            )
            + "\n"
        )
