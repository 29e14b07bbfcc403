"""Interop fixtures: a consumer group mixing real Scala 1.1.1 members (JVMs) and zkconsumer members."""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from harness import member as member_process
from harness import python_env
from harness.kdc import KerberosLogin
from harness.members import Recorder, drain, wait_for_balanced
from harness.scala import DEFAULT_RELEASE, FAST_PROPERTIES, ScalaMember, read_deliveries
from zkconsumer import ConsumerConnector, Whitelist
from zkconsumer.config.compat import DEFAULT, Compat
from zkconsumer.testing.process import die_with_parent

Key = tuple[str, int, int]
PY_PROPERTIES = {**FAST_PROPERTIES, "consumer.timeout.ms": 200}


class PyProcessMember:
    """A zkconsumer member in its own process (harness.member), so it can be kill -9'd."""

    def __init__(self, zookeeper_connect: str, group: str, name: str, topic: str, streams: int, workdir: Path) -> None:
        self.name = name
        self.out_path = workdir / f"py-{name}.deliveries"
        self.log_path = workdir / f"py-{name}.log"
        props = {**PY_PROPERTIES, "consumer.id": name}
        cmd = member_process.command(zookeeper_connect, group, topic, self.out_path, streams=streams, properties=props)
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                preexec_fn=die_with_parent,
                env=python_env(),
            )  # no orphans if pytest dies
        assert self.popen.stdout is not None
        line = self.popen.stdout.readline()  # printed once the first rebalance is done
        if not line:
            raise AssertionError(f"zkconsumer member {name} died:\n{self.log_tail()}")
        self.consumer_id = json.loads(line)["consumer_id"]

    def deliveries(self) -> list[Key]:
        return read_deliveries(self.out_path)

    def keys(self) -> collections.Counter[Key]:
        return collections.Counter(self.deliveries())

    def kill(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def log_tail(self, lines: int = 25) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class MixedGroup:
    """One group's members, Scala and zkconsumer, with everything they delivered.

    Scala members run as JVMs (deliveries in files); zkconsumer members run in this process
    (deliveries in `recorder`). Members are named; consumer ids are f"{group}_{name}".
    """

    def __init__(self, cluster, zk, group: str, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        self.cluster, self.zk, self.group, self.workdir = cluster, zk, group, workdir
        self.scala: dict[str, ScalaMember] = {}
        self.py: dict[str, ConsumerConnector] = {}
        self.procs: dict[str, PyProcessMember] = {}
        self.left: dict[str, ScalaMember | PyProcessMember] = {}  # gone members' delivery files
        self.recorder = Recorder()

    # ---- joining and leaving ---------------------------------------------------------------
    def add_scala(
        self,
        name: str,
        topics: Mapping[str, int] | None = None,
        *,
        whitelist: str | None = None,
        streams: int = 1,
        strategy: str = "range",
        zookeeper_sasl: tuple[str, str] | None = None,
        zookeeper_kerberos: KerberosLogin | None = None,
        release: str = DEFAULT_RELEASE,
        **props: object,
    ) -> ScalaMember:
        """Start a Scala member of `release` (harness.scala.RELEASES; returns before it is ready, see
        wait_ready); `zookeeper_sasl` = (user, password) logs it in to ZooKeeper with SASL DIGEST-MD5,
        `zookeeper_kerberos` with GSSAPI."""
        member = ScalaMember(
            self.cluster.zookeeper_connect,
            self.group,
            name,
            workdir=self.workdir,
            topics=topics,
            whitelist=whitelist,
            streams=streams,
            strategy=strategy,
            properties={k.replace("_", "."): v for k, v in props.items()},
            zookeeper_sasl=zookeeper_sasl,
            zookeeper_kerberos=zookeeper_kerberos,
            release=release,
        )
        self.scala[name] = member.start()
        return member

    def add_py(
        self,
        name: str,
        topics: Mapping[str, int] | None = None,
        *,
        whitelist: str | None = None,
        streams: int = 1,
        strategy: str = "range",
        **props: object,
    ) -> ConsumerConnector:
        """Start a zkconsumer member and drain its streams (blocks for its first rebalance)."""
        conn = ConsumerConnector(
            {
                **PY_PROPERTIES,
                "zookeeper.connect": self.cluster.zookeeper_connect,
                "group.id": self.group,
                "consumer.id": name,
                "partition.assignment.strategy": strategy,
                **{k.replace("_", "."): v for k, v in props.items()},
            }
        )
        self.py[name] = conn
        if whitelist is not None:
            found = conn.create_message_streams_by_filter(Whitelist(whitelist), streams)
        else:
            found = [s for per_topic in conn.create_message_streams(dict(topics or {})).values() for s in per_topic]
        drain(name, found, self.recorder)
        return conn

    def add_py_process(self, name: str, topic: str, streams: int = 1) -> PyProcessMember:
        """A zkconsumer member in a child process (blocks for its first rebalance)."""
        member = PyProcessMember(self.cluster.zookeeper_connect, self.group, name, topic, streams, self.workdir)
        self.procs[name] = member
        return member

    def wait_ready(self, timeout: float = 90.0) -> None:
        for member in self.scala.values():
            member.wait_ready(timeout)

    def leave(self, name: str) -> float:
        """Clean leave (shutdown, which commits) of one member; returns how long it took."""
        began = time.monotonic()
        if name in self.py:
            self.py.pop(name).shutdown()
        else:
            member = self.scala.pop(name)
            member.stop()
            self.left[name] = member
        return time.monotonic() - began

    def kill(self, name: str) -> None:
        """kill -9 (Scala or process member): no commit; its nodes stay until its session expires."""
        member = self.scala.pop(name, None) or self.procs.pop(name)
        member.kill()
        self.left[name] = member

    def close(self) -> None:
        for conn in self.py.values():
            conn.shutdown()
        for member in self.scala.values():
            member.process.stop(timeout=10)
        for proc in self.procs.values():
            proc.popen.send_signal(signal.SIGTERM)
            try:
                proc.popen.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    # ---- observing -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.scala) + len(self.py) + len(self.procs)

    def deliveries(self, name: str) -> list[Key]:
        """What one member (live or gone) handed to its application, in order per stream."""
        member = self.scala.get(name) or self.procs.get(name) or self.left.get(name)
        if member is not None:
            return member.deliveries()
        return [(d.topic, d.partition, d.offset) for d in self.recorder.deliveries if d.member == name]

    def keys(self) -> collections.Counter[Key]:
        """(topic, partition, offset) -> how many times any member delivered it."""
        total = self.recorder.keys()
        for member in [*self.scala.values(), *self.procs.values(), *self.left.values()]:
            total.update(member.keys())
        return total

    def wait_for(self, expected: Iterable[Key], timeout: float = 60.0) -> None:
        want = set(expected)
        deadline = time.monotonic() + timeout
        while missing := want - set(self.keys()):
            if self.recorder.errors:
                raise AssertionError(f"a zkconsumer drain thread failed: {self.recorder.errors[0]!r}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(missing)} of {len(want)} messages never delivered, e.g. "
                    f"{sorted(missing)[:5]}\n{self.log_tails()}"
                )
            time.sleep(0.05)

    def balanced(
        self, topics: Iterable[str], *, strategy: str = "range", timeout: float = 60.0, compat: Compat = DEFAULT
    ) -> dict[tuple[str, int], str]:
        """wait_for_balanced with every current member registered; Scala logs on failure."""
        try:
            return wait_for_balanced(
                self.zk, self.group, topics, members=self.size, strategy=strategy, timeout=timeout, compat=compat
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log_tails()}") from None

    def scala_rebalances(self) -> dict[str, tuple[int, int]]:
        """Per live Scala member: the rebalance tries it has begun and ended so far (from its log)."""
        out = {}
        for name, member in self.scala.items():
            log = member.log_tail(100000)
            out[name] = (log.count("begin rebalancing"), log.count("end rebalancing"))
        return out

    def settled(
        self, topics: Iterable[str], since: Mapping[str, tuple[int, int]], *, timeout: float = 60.0
    ) -> dict[tuple[str, int], str]:
        """balanced() once every Scala member of `since` has rebalanced after it and is not mid-try.

        A membership change makes every Scala member rebalance, and a Scala rebalance deletes and
        re-creates all of its owner nodes: owners can look balanced before a slow Scala member has
        even begun, and then vanish for a moment under a reader."""
        deadline = time.monotonic() + timeout
        while True:
            now = self.scala_rebalances()
            waiting = [n for n in since if n in now and not (now[n][0] > since[n][0] and now[n][0] == now[n][1])]
            if not waiting:
                return self.balanced(topics, timeout=max(1.0, deadline - time.monotonic()))
            if time.monotonic() > deadline:
                raise AssertionError(f"Scala members {waiting} did not finish a rebalance\n{self.log_tails()}")
            time.sleep(0.1)

    def log_tails(self, lines: int = 25) -> str:
        members = [*self.scala.values(), *self.procs.values()]
        return "\n".join(f"--- {m.name} ({m.log_path}) ---\n{m.log_tail(lines)}" for m in members)


@pytest.fixture
def mixed(cluster, zk, group_id: str, tmp_path: Path) -> Iterator[MixedGroup]:  # type: ignore[no-untyped-def]
    group = MixedGroup(cluster, zk, group_id, tmp_path)
    try:
        yield group
    finally:
        group.close()
