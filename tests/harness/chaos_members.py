"""Chaos group members (in this process or in a child process) and the faults done to them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.handlers.threading import KazooTimeoutError

from harness.chaos_proxy import TcpProxy
from harness.member_process import ChildMember
from harness.members import drain
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

Note = Callable[..., None]  # checker.note(kind, member, detail="")


def expire_session(hosts: str, client_id: tuple[int, bytes], attempts: int = 3) -> None:
    """End a ZooKeeper session for real: attach a second client to it, then close that client.

    The twin connects without the chroot: kazoo's start() reads the chroot after connecting, and
    that read fails with ConnectionLoss when the session's own client reconnects in between (the
    server drops the older of two connections of one session). Such a race is tried again.
    """
    for attempt in range(1, attempts + 1):
        twin = KazooClient(hosts=hosts.split("/", 1)[0], client_id=client_id, timeout=10.0)
        try:
            twin.start(timeout=15)
            return
        except (ConnectionLoss, KazooTimeoutError):
            if attempt == attempts:
                raise
        finally:
            twin.stop()
            twin.close()


def garble_registration(zk, group: str, data: bytes = b"\x00{garbage: not json") -> str:  # type: ignore[no-untyped-def]
    """Write an undecodable member node (ephemeral of `zk`'s session); returns its path."""
    path = znodes.member_path(group, f"{group}_garbled-{int(time.time() * 1000)}-0000dead")
    zk.create(path, data, ephemeral=True, makepath=True)
    return path


class InProcessMember:
    """A ConsumerConnector in this process, drained by members.drain into the checker's sink."""

    kind = "inproc"

    def __init__(self, props: Mapping[str, object], topics: Mapping[str, int], sink, note: Note) -> None:  # type: ignore[no-untyped-def]
        self._props = dict(props)
        self._topics = dict(topics)
        self._sink = sink
        self._note = note
        self.connector: ConsumerConnector | None = None
        self.consumer_id = ""
        self.alive = False
        self.proxy: TcpProxy | None = None  # set when its ZooKeeper traffic goes through one
        self._threads: list[threading.Thread] = []

    def start(self) -> InProcessMember:
        self.connector = ConsumerConnector(self._props)
        self.consumer_id = self.connector.consumer_id
        streams = self.connector.create_message_streams(self._topics)
        self._threads = drain(self.consumer_id, [s for group in streams.values() for s in group], self._sink)
        self.alive = True
        return self

    def session(self) -> tuple[int, bytes] | None:
        return self.connector.group.client.client_id if self.connector else None

    def leave(self) -> None:
        """Clean shutdown: commit, leave the group, end the drain threads."""
        if not self.alive or self.connector is None:
            return
        self._note("leave", self.consumer_id)
        self.alive = False
        self.connector.shutdown()
        for thread in self._threads:
            thread.join(10)

    def describe(self) -> str:
        return f"{self.consumer_id} (in-process)"


class ProcessMember(ChildMember):
    """harness.chaos_member in a child process: can be killed -9, stopped and continued."""

    kind = "process"

    def __init__(
        self,
        zookeeper: str,
        group: str,
        props: Mapping[str, object],
        topics: Mapping[str, int],
        workdir: Path,
        name: str,
        note: Note,
        *,
        nice: int | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        """`wrap` puts the process somewhere, e.g. in a network lab host: `wrap=lab_host.command`."""
        out = workdir / f"{name}.deliveries"
        self._nice = nice
        self._note = note
        self.alive = False
        self.stopped = False
        self.proxy: TcpProxy | None = None
        args = [
            sys.executable,
            "-m",
            "harness.chaos_member",
            "--zookeeper",
            zookeeper,
            "--group",
            group,
            "--out",
            str(out),
        ]
        args += [f"--topic={t}:{n}" for t, n in topics.items()]
        args += [f"--property={k}={v}" for k, v in props.items() if k not in ("zookeeper.connect", "group.id")]
        super().__init__(wrap(args) if wrap is not None else args, out, workdir / f"{name}.log")

    def spawn(self) -> None:
        """Start the process (call from the main thread: the death signal is tied to the forking thread)."""
        super().spawn()
        assert self.proc is not None
        if self._nice is not None:  # after the fork, not in it: preexec_fn is unsafe beside threads
            os.setpriority(os.PRIO_PROCESS, self.proc.pid, self._nice)

    def wait_ready(self, timeout: float = 60.0) -> ProcessMember:
        """Until the member has joined (its first rebalance succeeded) and said who it is."""
        self._read_ready(timeout, f"member process did not start within {timeout:.0f}s")
        self.alive = True
        return self

    def start(self) -> ProcessMember:
        self.spawn()
        return self.wait_ready()

    def session(self) -> tuple[int, bytes] | None:
        try:
            sid, password = self.session_file.read_text().split()
        except (OSError, ValueError):
            return None
        return int(sid, 16), bytes.fromhex(password)

    def kill(self) -> None:
        """kill -9: no commit, no goodbye; its session lives on until it times out."""
        assert self.proc is not None
        self._note("kill", self.consumer_id)
        self.proc.kill()
        self.proc.wait(10)
        self.alive = self.stopped = False

    def stop(self) -> None:
        """SIGSTOP: the process freezes mid-delivery (a GC pause or a stuck handler, seen from outside)."""
        assert self.proc is not None
        self._note("stop", self.consumer_id)
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True

    def cont(self) -> None:
        assert self.proc is not None
        self._note("cont", self.consumer_id)
        self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def leave(self, timeout: float = 30.0) -> None:
        """SIGTERM: clean shutdown (commit, leave the group)."""
        if self.proc is None or self.proc.poll() is not None:
            self.alive = False
            return
        self._note("leave", self.consumer_id)
        if self.stopped:
            self.cont()
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.alive = False

    def exited(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None

    def describe(self) -> str:
        pid = self.proc.pid if self.proc else None
        return f"{self.consumer_id or '?'} (pid {pid}, log {self.log})"

    def __del__(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass


def start_members(make: Callable[[], object], count: int) -> list:  # type: ignore[type-arg]
    """Start `count` members at once (a burst of joins); process members spawn first, then all wait."""
    members = [make() for _ in range(count)]
    procs = [m for m in members if isinstance(m, ProcessMember)]
    for m in procs:
        m.spawn()
    others = [m for m in members if not isinstance(m, ProcessMember)]
    errors: list[BaseException] = []

    def run(member) -> None:  # type: ignore[no-untyped-def]
        try:
            member.start()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(m,), name=f"chaos-join-{i}", daemon=True) for i, m in enumerate(others)
    ]
    for t in threads:
        t.start()
    for m in procs:
        try:
            m.wait_ready()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return members
