"""A ZooKeeper blip in the same session re-arms the watches (SetWatches): only what changed meanwhile is re-read; off or refused, everything is, and still right."""

from __future__ import annotations

import re
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from zkconsumer.exporter.exporter import Exporter
from zkconsumer.testing.ensemble import ZooKeeperEnsemble
from zkconsumer.testing.jars import JarsMissingError
from zkconsumer.testing.probes import ClusterStartError, free_port
from zkconsumer.testing.relay import RelayProcess
from zkconsumer.testing.versions import kafka_release, zookeeper_release
from zkconsumer.zookeeper import internals, znodes
from zkconsumer.zookeeper.client import ZkIO, close_quietly, connect
from zkconsumer.zookeeper.watch_rearm import WatchRearm
from zkconsumer.zookeeper.watched import WatchedFolder

pytestmark = [pytest.mark.cluster]
CHILDREN = 40


class WatcherSet(set):  # type: ignore[type-arg]
    """A set kazoo can use as it uses its own, but not the `set` the re-arm was written against."""


class Link:
    """The client's only way to ZooKeeper, a relay: `cut()` drops the link, `mend()` brings it back."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.port = free_port()
        self.relay: RelayProcess | None = None
        self.mend()

    def mend(self) -> None:
        self.relay = RelayProcess(list, self.port, target=self.server, name="zk-relay").start()

    def cut(self) -> None:
        if self.relay is not None:
            self.relay.stop()
            self.relay = None


def _wait(what: str, done: Callable[[], bool], timeout_s: float = 20.0) -> float:
    began = time.monotonic()
    while not done():
        assert time.monotonic() - began < timeout_s, f"{what}: not within {timeout_s:g} s"
        time.sleep(0.02)
    return time.monotonic() - began


def _blip(client: KazooClient, link: Link, during: Callable[[], None]) -> None:
    """Cut the link, run `during` (changes made while the client cannot see), mend it; the same session."""
    session = client.client_id
    link.cut()
    _wait("the client never noticed the cut", lambda: client.state != KazooState.CONNECTED)
    during()
    link.mend()
    _wait("the client never reconnected", lambda: client.state == KazooState.CONNECTED)
    assert client.client_id == session, "a new session: this test is about a blip within one"


@pytest.fixture(scope="module")
def zookeeper_34(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A 3.4 server (the one Kafka 1.1.1 bundles), for the oldest server the suite pairs with."""
    workdir = tmp_path_factory.mktemp("rearm-zk34")
    kafka = kafka_release("1.1.1")
    made = ZooKeeperEnsemble(workdir, 1, release=zookeeper_release(None, kafka), broker_jars=kafka.jar_set)
    try:
        made.start(timeout=60)
    except (ClusterStartError, JarsMissingError) as exc:
        made.stop()
        pytest.fail(f"ZooKeeper 3.4 did not start:\n{exc}\n{made.log_tails()}", pytrace=False)
    try:
        yield made.hosts
    finally:
        made.stop()


def _server(request: pytest.FixtureRequest, which: str) -> tuple[str, str]:
    """(host:port of one server, chroot) of the session cluster's 3.8 or the module's 3.4."""
    if which == "3.4":
        return request.getfixturevalue("zookeeper_34").split(",")[0], ""
    cluster = request.getfixturevalue("cluster")
    hosts, slash, chroot = cluster.zookeeper_connect.partition("/")
    return hosts.split(",")[0], slash + chroot


@pytest.mark.parametrize(
    ("server", "gate"),
    [
        ("3.8", "on"),
        ("3.4", "on"),
        ("3.8", "switched off"),
        ("3.8", "kazoo untested"),
        ("3.8", "tables of another shape"),
    ],
)
def test_a_blip_re_reads_what_changed_meanwhile_and_nothing_else(
    server: str, gate: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folder f with CHILDREN nodes and folder m not yet made, read behind watches; while the link
    is down a child changes, one goes, one comes, and m is made with a child. After the reconnect
    the reads show all of it. Re-armed: for 5 requests (f's list, the changed and new child, m's
    list and child). On the stock path (the switch off, a kazoo not tested, tables of another
    shape): every child again."""
    monkeypatch.setattr(internals, "_said", set())
    if gate == "switched off":
        monkeypatch.setenv(internals.REARM_SWITCH, "0")
    elif gate == "kazoo untested":
        monkeypatch.setattr(internals, "kazoo_version", lambda: "2.12.0")
    host, chroot = _server(request, server)
    root = f"/rearm-{uuid.uuid4().hex[:8]}"
    admin = KazooClient(hosts=host + chroot)
    admin.start(10)
    link = Link(host)
    client = connect(f"127.0.0.1:{link.port}{chroot}", session_timeout_s=30.0, connect_timeout_s=10.0)
    try:
        for n in range(CHILDREN):
            admin.create(f"{root}/f/{n}", b"0", makepath=True)
        if gate == "tables of another shape":  # as another kazoo might keep them: still sets to kazoo itself
            client._data_watchers = defaultdict(WatcherSet)
        rearm = WatchRearm(client)
        assert rearm.enabled is (gate == "on")
        io = ZkIO(client, 10.0, "the test")
        folder, missing = WatchedFolder(io, f"{root}/f"), WatchedFolder(io, f"{root}/m")
        assert len(folder.read()) == CHILDREN and missing.read() == {}
        before = folder.requests + missing.requests

        def change() -> None:
            admin.set(f"{root}/f/7", b"1")
            admin.delete(f"{root}/f/9")
            admin.create(f"{root}/f/new", b"2")
            admin.create(f"{root}/m/x", b"3", makepath=True)

        _blip(client, link, change)

        def shown() -> bool:
            f, m = folder.read(), missing.read()
            return f.get("7", (b"",))[0] == b"1" and "9" not in f and "new" in f and "x" in m

        _wait("the changes made during the cut never showed", shown, 10.0)
        sent = folder.requests + missing.requests - before
        if gate == "on":
            assert sent == 5, f"{sent} requests after the blip: unchanged nodes were re-read"
            _wait("the re-arm was never answered", lambda: rearm.rearmed == 1, 5.0)
            assert rearm.fallbacks == 0 and rearm.paths == CHILDREN + 2  # f's children, f's list, m's exists
        else:
            assert sent >= CHILDREN + 3, f"only {sent} requests on the stock path"
        rearm.close()
    finally:
        close_quietly(client, 10)
        link.cut()
        admin.stop()
        admin.close()


@pytest.mark.parametrize("gate", ["on", "switched off"])
def test_the_exporter_after_a_blip_reads_only_the_commit_made_meanwhile(
    gate: str, cluster: Any, zk: Any, group_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two groups of 20 offset nodes; a commit made while the exporter's link was down shows after
    the reconnect, for the requests a commit costs with the link up when re-armed, for every node
    again on the stock path."""
    monkeypatch.setattr(internals, "_said", set())
    if gate == "switched off":
        monkeypatch.setenv(internals.REARM_SWITCH, "0")
    groups = [group_id, f"{group_id}-b"]
    for group in groups:
        for partition in range(20):
            zk.create(znodes.offset_path(group, "gone-topic", partition), b"3", makepath=True)
    hosts, slash, chroot = cluster.zookeeper_connect.partition("/")
    link = Link(hosts.split(",")[0])
    client = connect(f"127.0.0.1:{link.port}{slash}{chroot}", session_timeout_s=30.0, connect_timeout_s=10.0)
    exporter = Exporter(
        client, None, host="127.0.0.1", port=0, interval_s=30.0, window_s=60.0,
        groups=re.compile(re.escape(group_id) + ".*"),
    )  # fmt: skip
    exporter.start()
    try:
        exporter.wait_for_refresh(0, 30.0)

        def committed(partition: int) -> int | None:
            return exporter.view.state.groups[group_id].last.sample.partitions[("gone-topic", partition)].committed

        def cost(commit: Callable[[], None], partition: int) -> int:
            """Requests the view sent to show a commit (a half-second more counts a late re-read too)."""
            requests = exporter.view.requests
            commit()
            took = _wait("the commit never showed", lambda: committed(partition) == 8, 10.0)
            assert took < 5.0, f"the commit showed after {took:.1f} s (the tick is 30 s)"
            time.sleep(0.5)
            return exporter.view.requests - requests

        def commit(partition: int) -> Callable[[], None]:
            return lambda: zk.set(znodes.offset_path(group_id, "gone-topic", partition), b"8")

        plain = cost(commit(4), 4)  # a commit with the link up: the node, and the topic asked about
        blip = cost(lambda: _blip(client, link, commit(5)), 5)
        if gate == "on":
            assert blip == plain, f"{blip} requests for a commit made during a blip, {plain} without: more re-read"
            assert exporter.health_doc()["watch_rearms"] == 1
        else:
            assert blip >= plain + 39, f"only {blip} requests on the stock path ({plain} for a commit)"
    finally:
        assert exporter.stop(10)
        link.cut()
        close_quietly(client, 10)


def test_a_session_lost_during_the_cut_re_reads_everything(cluster: Any) -> None:
    """The session is closed (by a second client with its id and password) while the link is down:
    the reconnect finds it gone, kazoo's LOST fires every kept watch, and the reads show a change
    made meanwhile, every child read again, no re-arm counted."""
    hosts, slash, chroot = cluster.zookeeper_connect.partition("/")
    host, chroot = hosts.split(",")[0], slash + chroot
    root = f"/rearm-{uuid.uuid4().hex[:8]}"
    admin = KazooClient(hosts=host + chroot)
    admin.start(10)
    link = Link(host)
    client = connect(f"127.0.0.1:{link.port}{chroot}", session_timeout_s=30.0, connect_timeout_s=10.0)
    try:
        for n in range(CHILDREN):
            admin.create(f"{root}/f/{n}", b"0", makepath=True)
        rearm = WatchRearm(client)
        assert rearm.enabled
        folder = WatchedFolder(ZkIO(client, 10.0, "the test"), f"{root}/f")
        assert len(folder.read()) == CHILDREN
        before, session = folder.requests, client.client_id
        states: list[KazooState] = []
        client.add_listener(states.append)
        link.cut()
        _wait("the client never noticed the cut", lambda: client.state != KazooState.CONNECTED)
        admin.set(f"{root}/f/3", b"1")
        thief = KazooClient(hosts=host + chroot, client_id=session)
        thief.start(10)
        thief.stop()  # closes the session the cut client still holds
        thief.close()
        link.mend()
        _wait("the client never came back", lambda: client.state == KazooState.CONNECTED)
        assert client.client_id != session and KazooState.LOST in states
        _wait("the change never showed", lambda: folder.read()["3"][0] == b"1", 10.0)
        assert folder.requests - before >= CHILDREN + 1 and rearm.rearmed == 0
        rearm.close()
    finally:
        close_quietly(client, 10)
        link.cut()
        admin.stop()
        admin.close()
