"""A member behind a follower that lost its leader stops delivering before its session can expire (issue #42, finding 3).

A 3-server ensemble in the network lab; members connected to one follower only. The follower is
cut from the other two servers (nftables) while the members still reach it. ZooKeeper lets a
follower answer reads from its own copy until it gives its leader up (syncLimit × tickTime: 3 s
here), while the leader, hearing nothing of the members' sessions, expires them after the
session timeout (4 s). A lease renewed by a read goes on being renewed meanwhile and outlives
the session; one renewed by sync-then-read (the default) cannot be renewed once the follower
lost its leader, so it ends before the session can. Both run side by side in one run: the
default, and today's read renewal (`renewal="read"`). The expiry is the moment the leader's
watch sees the member node go, so an overlap measured here is, if anything, too small.

The second and third tests record what leader-confirmed renewals cost (docs/performance.md has
the figures): requests per member per second and the ensemble's writes per second for each way
of renewing, and the longest delivery gap each sees while the ensemble elects a new leader.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness import python_env
from harness.lease_probe import now, read_lines
from zkconsumer.testing import netfaults
from zkconsumer.testing.cluster import LOG4J
from zkconsumer.testing.ensemble import ZooKeeperEnsemble
from zkconsumer.testing.jars import JarsMissingError
from zkconsumer.testing.netlab import NetLab
from zkconsumer.testing.nodes import ZooKeeperNode
from zkconsumer.testing.probes import ClusterStartError, four_letter_word
from zkconsumer.testing.versions import DEFAULT_KAFKA, kafka_release, zookeeper_release

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]

SESSION_MS = 4000
GROUP = "lease-follower"


@pytest.fixture(scope="module")
def ensemble(lab: NetLab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    workdir = tmp_path_factory.mktemp("lease-ensemble")
    (workdir / "log4j.properties").write_text(LOG4J)
    kafka = kafka_release(DEFAULT_KAFKA)
    made = ZooKeeperEnsemble(
        workdir,
        3,
        release=zookeeper_release(None, kafka),
        broker_jars=kafka.jar_set,
        places=[lab.host(f"zk{i}") for i in range(1, 4)],
    )
    try:
        made.start(timeout=180)
    except (ClusterStartError, JarsMissingError) as exc:
        made.stop()
        pytest.fail(f"a 3-server ensemble in the lab did not start:\n{exc}", pytrace=False)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture(autouse=True)
def healed(lab: NetLab) -> Iterator[None]:
    yield
    lab.heal_all()


class Probe:
    """One lease probe (harness.lease_probe) in lab host m1, its JSON lines collected on a thread."""

    def __init__(self, lab: NetLab, hosts: str, name: str, renewal: str | None) -> None:
        argv = [sys.executable, "-m", "harness.lease_probe", hosts, GROUP, name, f"--session-ms={SESSION_MS}"]
        argv += [f"--renewal={renewal}"] if renewal else []
        self.name = name
        self.proc = lab.host("m1").popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=python_env()
        )
        ready = read_lines(self.proc, "ready", 60.0)[-1]
        self.session: int = ready["session"]
        self.path: str = ready["path"]
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        import json

        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            self.lines.append(json.loads(text))

    def finish(self) -> dict[str, Any]:
        """Stop it; its closing counts."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(5)
        done = [line for line in self.lines if line.get("event") == "done"]
        return done[-1] if done else {}

    def usable_until(self) -> float | None:
        """When its gate last closed (None: it never did)."""
        closes = [line["t"] for line in self.lines if line.get("event") == "usable" and not line["usable"]]
        return closes[-1] if closes else None

    def longest_gap(self) -> float:
        """The longest time its gate stayed closed (to its end, if it never reopened)."""
        longest, closed_at = 0.0, None
        for line in self.lines:
            if line.get("event") != "usable":
                continue
            if not line["usable"]:
                closed_at = line["t"]
            elif closed_at is not None:
                longest, closed_at = max(longest, line["t"] - closed_at), None
        if closed_at is not None:
            longest = max(longest, now() - closed_at)
        return longest


def expiry_watch(leader: ZooKeeperNode, paths: list[str]) -> tuple[Any, dict[str, float]]:
    """A client on the leader alone watching each member node: path -> when the leader deleted it."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=f"{leader.address}:{leader.port}", timeout=10.0)
    client.start(timeout=30)
    gone: dict[str, float] = {}
    for path in paths:

        def fire(event: Any, path: str = path) -> None:
            if event.type == "DELETED":
                gone.setdefault(path, now())

        assert client.exists(path, watch=fire) is not None
    return client, gone


def test_a_member_behind_a_follower_cut_from_its_leader_stops_delivering_before_its_session_expires(
    lab: NetLab, ensemble: ZooKeeperEnsemble
) -> None:
    leader = ensemble.wait_leader()
    follower = next(s for s in ensemble.servers if s.server_id != leader.server_id)
    others = [lab.host_at(s.address) for s in ensemble.servers if s is not follower]
    hosts = f"{follower.address}:{follower.port}"
    new, old = Probe(lab, hosts, "default", None), Probe(lab, hosts, "read", "read")
    watcher, gone = expiry_watch(leader, [new.path, old.path])
    try:
        time.sleep(2.0)  # a few renewals through the follower
        cut_at = now()
        with netfaults.cut(lab, lab.host_at(follower.address), others):
            deadline = time.monotonic() + 30
            while len(gone) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(SESSION_MS / 1000.0)  # whatever lease is left runs out
        new_counts, old_counts = new.finish(), old.finish()
    finally:
        watcher.stop()
        watcher.close()
        new.proc.kill()
        old.proc.kill()
    assert set(gone) == {new.path, old.path}, "the leader did not expire both sessions"
    new_end, old_end = new.usable_until(), old.usable_until()
    assert new_end is not None and old_end is not None
    new_overlap = max(0.0, new_end - gone[new.path])
    old_overlap = max(0.0, old_end - gone[old.path])
    print(
        f"cut at 0; default renewal: delivery stopped at {new_end - cut_at:.2f}s, session expired at "
        f"{gone[new.path] - cut_at:.2f}s (overlap {new_overlap:.2f}s, {new_counts}); read renewal: stopped at "
        f"{old_end - cut_at:.2f}s, expired at {gone[old.path] - cut_at:.2f}s (overlap {old_overlap:.2f}s, {old_counts})"
    )
    assert new_end < gone[new.path], "the default renewal delivered after the leader expired its session"
    assert old_end > gone[old.path], "today's read renewal no longer outlives the session: this lab shows nothing"


def _zxid(server: ZooKeeperNode) -> int:
    answer = four_letter_word(server.port, "srvr", 2.0, host=server.address) or ""
    line = next(x for x in answer.splitlines() if x.startswith("Zxid:"))
    return int(line.split()[1], 16)


def _packets(server: ZooKeeperNode) -> int:
    answer = four_letter_word(server.port, "mntr", 2.0, host=server.address) or ""
    line = next(x for x in answer.splitlines() if x.startswith("zk_packets_received"))
    return int(line.split()[1])


@pytest.mark.parametrize("renewal", ["read", "sync", "check"])
def test_what_each_way_of_renewing_costs(lab: NetLab, ensemble: ZooKeeperEnsemble, renewal: str) -> None:
    """Four members on one follower for 12 s: requests per member per second and the ensemble's
    writes per second. Only the checks are writes: the leader's zxid moves for them alone."""
    members, window = 4, 12.0
    leader = ensemble.wait_leader()
    follower = next(s for s in ensemble.servers if s.server_id != leader.server_id)
    hosts = f"{follower.address}:{follower.port}"
    probes = [Probe(lab, hosts, f"cost-{renewal}-{i}", renewal) for i in range(members)]
    try:
        time.sleep(1.0)
        zxid, packets = _zxid(leader), _packets(follower)
        time.sleep(window)
        writes = _zxid(leader) - zxid
        requests = _packets(follower) - packets
        counts = [p.finish() for p in probes]
    finally:
        for p in probes:
            p.proc.kill()
    renewals = sum(c.get("confirmed", 0) for c in counts)
    print(
        f"{renewal}: {requests / members / window:.2f} requests/member/s (pings included), "
        f"{writes / window:.2f} writes/s on the ensemble, {renewals} renewals confirmed in all"
    )
    assert renewals > 0
    if renewal == "check":
        assert writes > 0
    else:
        assert writes == 0


def test_the_longest_delivery_gap_while_the_ensemble_elects_a_new_leader(
    lab: NetLab, ensemble: ZooKeeperEnsemble
) -> None:
    leader = ensemble.wait_leader()
    hosts = ",".join(f"{s.address}:{s.port}" for s in ensemble.servers)
    probes = {r: Probe(lab, hosts, f"election-{r}", r) for r in ("read", "sync", "check")}
    try:
        time.sleep(2.0)
        killed = now()
        ensemble.kill_server(leader.server_id)
        ensemble.wait_leader(60, not_server=leader.server_id)
        elected = now() - killed
        time.sleep(2 * SESSION_MS / 1000.0)
        gaps = {r: p.longest_gap() for r, p in probes.items()}
        reopened = {r: p.lines[-1].get("usable") for r, p in probes.items()}
        for p in probes.values():
            p.finish()
    finally:
        for p in probes.values():
            p.proc.kill()
        ensemble.start_server(leader.server_id)
    print(
        f"a new leader {elected:.2f}s after the old one was killed; longest delivery gap: "
        + ", ".join(f"{r} {g:.2f}s" for r, g in gaps.items())
    )
    assert reopened == {"read": True, "sync": True, "check": True}, "a member did not deliver again after the election"
