"""The migration paths an operator runs, driven on an AuditRun: today's rolling path and the live switch, with faults.

rolling  docs/migration.md's path 2 exactly: restart the members one at a time into dual commit
         (offsets.storage=kafka, dual.commit.enabled=true), stop the group, `zkconsumer migrate
         offsets --to kafka --execute`, start the same application with zkconsumer.coordination=broker.
live     `zkconsumer migrate switch --to broker` while the members run, hold, `--to zookeeper`.
Faults happen during the switch (rolling: after the first restart; live: while the command runs).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

from harness import python_env
from harness.switch_audit import offsets_differ
from harness.switch_run import AuditRun, cli_command, clock

FAULTS = ("none", "kill", "kill-leader", "coordinator", "expire", "add-partitions", "kill-switch")
DUAL_COMMIT = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}
BROKER = {"zkconsumer.coordination": "broker"}


class PathUnavailable(Exception):
    """The path cannot run on this checkout (e.g. no `migrate switch` command): no figures."""


@dataclass
class Settings:
    members: int = 6
    warm: float = 10.0  # seconds of steady delivery before the switch begins
    hold: float = 10.0  # seconds after each step
    fault: str = "none"
    fault_delay: float = 1.0  # seconds into the switch
    added_partitions: int = 4
    switch_timeout: float = 120.0
    member_props: Mapping[str, object] = field(default_factory=dict)


@dataclass
class SwitchPoint:
    """The committed offsets of both stores at one moment of the switch."""

    label: str
    zookeeper: dict[int, int]
    kafka: dict[int, int]

    @property
    def differ(self) -> dict[int, tuple[int | None, int | None]]:
        return offsets_differ(self.zookeeper, self.kafka)

    def describe(self) -> str:
        d = self.differ
        if not d:
            return f"{self.label}: Kafka = ZooKeeper on {len(self.zookeeper)} partitions"
        shown = ", ".join(f"{p}: zk {z} kafka {k}" for p, (z, k) in list(d.items())[:6])
        return f"{self.label}: {len(d)} of {len(set(self.zookeeper) | set(self.kafka))} partitions differ ({shown})"


def offsets_partitions(run: AuditRun) -> int:
    admin = AdminClient({"bootstrap.servers": run.cluster.bootstrap_servers})
    topic = admin.list_topics("__consumer_offsets", timeout=30).topics["__consumer_offsets"]
    return len(topic.partitions)


def fault(run: AuditRun, settings: Settings) -> None:
    """The settings' fault, now (kill-switch is the live path's own)."""
    if settings.fault == "kill":
        run.kill_member()
    elif settings.fault == "kill-leader":
        run.kill_group_leader()
    elif settings.fault == "expire":
        run.expire_member()
    elif settings.fault == "add-partitions":
        run.add_partitions(settings.added_partitions)
    elif settings.fault == "coordinator":
        run.restart_coordinator(offsets_partitions(run))


def point(run: AuditRun, label: str) -> SwitchPoint:
    zk, kafka = run.offsets()
    found = SwitchPoint(label, zk, kafka)
    run.note(found.describe())
    return found


def rolling(run: AuditRun, settings: Settings) -> list[SwitchPoint]:
    """docs/migration.md, path 2, as an operator runs it; returns the offsets at the stop."""
    if settings.fault in ("kill-switch", "kill-leader"):
        raise PathUnavailable(f"the rolling path has no switch during which to {settings.fault}")
    base = dict(settings.member_props)
    run.start_members(settings.members, base, "zk")
    run.begin()
    time.sleep(settings.warm)
    run.note("rolling restart into dual commit begins")
    originals = list(run.members)
    for i, old in enumerate(originals):
        if old not in run.members:
            continue  # killed by the fault
        run.replace_member(old, {**base, **DUAL_COMMIT}, f"dual{i}")
        if i == 0 and settings.fault != "none":
            time.sleep(settings.fault_delay)
            fault(run, settings)
    time.sleep(settings.hold)
    run.stop_members()
    at_stop = point(run, "at the stop")
    copy = run.cli(
        "migrate",
        "offsets",
        "--zookeeper",
        run.cluster.zookeeper_connect,
        "--bootstrap-server",
        run.cluster.bootstrap_servers,
        "-g",
        run.group,
        "--to",
        "kafka",
        "--execute",
        timeout=settings.switch_timeout,
    )
    if copy.returncode != 0:
        raise RuntimeError(f"migrate offsets --to kafka failed (exit {copy.returncode}):\n{copy.stdout}\n{copy.stderr}")
    run.start_members(settings.members, {**base, **BROKER}, "broker")
    time.sleep(settings.hold)
    return [at_stop]


def _switch(run: AuditRun, to: str, settings: Settings, *, with_fault: bool) -> None:
    args = [
        "migrate",
        "switch",
        "--zookeeper",
        run.cluster.zookeeper_connect,
        "--group",
        run.group,
        "--to",
        to,
        "--bootstrap-servers",
        run.cluster.bootstrap_servers,
        "--timeout",
        str(settings.switch_timeout),
        "--json",
    ]
    run.note(f"zkconsumer {' '.join(args)}")
    started = clock()
    proc = subprocess.Popen(
        cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=python_env()
    )
    if with_fault:
        time.sleep(settings.fault_delay)
        if settings.fault == "kill-switch":
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            run.note(f"kill -9 of the switch command after {clock() - started:.1f}s; run again")
            _switch(run, to, settings, with_fault=False)
            return
        fault(run, settings)
    try:
        out, err = proc.communicate(timeout=settings.switch_timeout + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise RuntimeError(f"migrate switch --to {to} did not end within {settings.switch_timeout + 30:.0f}s") from None
    run.note(f"migrate switch --to {to}: exit {proc.returncode} in {clock() - started:.1f}s {out.strip()[-400:]}")
    if proc.returncode != 0:
        raise RuntimeError(f"migrate switch --to {to} failed (exit {proc.returncode}):\n{out}\n{err[-3000:]}")


def live(run: AuditRun, settings: Settings) -> list[SwitchPoint]:
    """The live switch to broker coordination and back while the members run; returns the offsets at each end."""
    base = dict(settings.member_props)
    if settings.fault == "kill-leader":
        run.member_args = ["--log-group-leader"]
    run.start_members(settings.members, base, "zk")
    run.begin()
    time.sleep(settings.warm)
    _switch(run, "broker", settings, with_fault=settings.fault != "none")
    there = point(run, "at the switch to broker")
    time.sleep(settings.hold)
    _switch(run, "zookeeper", settings, with_fault=False)
    back = point(run, "at the switch back to zookeeper")
    time.sleep(settings.hold)
    return [there, back]


PATHS = {"rolling": rolling, "live": live}
