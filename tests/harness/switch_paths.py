"""The migration paths an operator runs, driven on an AuditRun: today's rolling path and the live switch, with faults.

rolling  docs/migration.md's path 2 exactly: restart the members one at a time into dual commit
         (offsets.storage=kafka, dual.commit.enabled=true), stop the group, `zkconsumer migrate
         offsets --to kafka --execute`, start the same application with zkconsumer.coordination=broker.
live     `zkconsumer migrate switch --to broker` while the members run, hold, `--to zookeeper`.
Faults happen during the switch (rolling: after the first restart; live: while the command runs).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

from harness import python_env
from harness.switch_audit import RestVerdict
from harness.switch_run import AuditRun, cli_command
from harness.switch_sampler import clock

FAULTS = ("none", "kill", "kill-leader", "coordinator", "expire", "add-partitions", "add-topic", "kill-switch")
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
    """Whether Kafka's committed offsets equal ZooKeeper's at one moment of the switch (AuditRun.offsets_at_rest)."""

    label: str
    verdict: RestVerdict

    @property
    def differ(self) -> dict[int, tuple[int | None, int | None]]:
        return self.verdict.unequal

    def describe(self) -> str:
        v = self.verdict
        text = f"{self.label}: Kafka = ZooKeeper on {len(v.equal)}, unequal on {len(v.unequal)}"
        text += f", unsettled (ZooKeeper moved while read) on {len(v.unsettled)}"
        if v.unequal:
            text += " (" + ", ".join(f"{p}: zk {z} kafka {k}" for p, (z, k) in list(v.unequal.items())[:6]) + ")"
        return text


def offsets_partitions(run: AuditRun) -> int:
    admin = AdminClient({"bootstrap.servers": run.cluster.bootstrap_servers})
    topic = admin.list_topics("__consumer_offsets", timeout=30).topics["__consumer_offsets"]
    return len(topic.partitions)


def fault(run: AuditRun, name: str, settings: Settings) -> None:
    """The fault `name`, now (kill-switch is the live switch's own: see switch())."""
    if name == "kill":
        run.kill_member()
    elif name == "kill-leader":
        run.kill_group_leader()
    elif name == "expire":
        run.expire_member()
    elif name == "add-partitions":
        run.add_partitions(settings.added_partitions)
    elif name == "coordinator":
        run.restart_coordinator(offsets_partitions(run))
    elif name == "add-topic":
        run.add_topic(settings.added_partitions)
    elif name != "none":
        raise ValueError(f"unknown fault {name!r}; one of {', '.join(FAULTS)}")


def switch_plan(run: AuditRun) -> dict[str, object]:
    """`migrate plan --json`'s `switch` object for the group ({} when the group has no switch node)."""
    done = run.cli(
        "migrate",
        "plan",
        "--zookeeper",
        run.cluster.zookeeper_connect,
        "--bootstrap-server",
        run.cluster.bootstrap_servers,
        "--group",
        run.group,
        "--json",
        timeout=120,
    )
    if done.returncode not in (0, 3):
        raise RuntimeError(f"migrate plan failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout).get("switch") or {}
    assert isinstance(found, dict)
    return found


def point(run: AuditRun, label: str) -> SwitchPoint:
    found = SwitchPoint(label, run.offsets_at_rest())
    run.note(found.describe())
    return found


def rolling(run: AuditRun, settings: Settings) -> list[SwitchPoint]:
    """docs/migration.md, path 2, as an operator runs it; returns the offsets at the stop."""
    if settings.fault in ("kill-switch", "kill-leader", "add-topic"):
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
            fault(run, settings.fault, settings)
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


def switch(run: AuditRun, to: str, settings: Settings, faults: Sequence[str] = ()) -> list[dict[str, object]]:
    """`migrate switch --to <to>` as an operator runs it, with `faults` one after the other while it
    runs, the first `settings.fault_delay` after it starts (kill-leader waits for `handover` itself).
    kill-switch: kill -9 of the command once the switch node is at a step between the two ends (the
    command must still be running), `migrate plan` read, and the command run again. Returns `migrate plan`'s switch object read after each kill of the command."""
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

    def start() -> subprocess.Popen[str]:
        run.note(f"zkconsumer {' '.join(args)}")
        # PYTHONFAULTHANDLER: a crash of the command (a signal) shows every thread's stack in its stderr
        env = {**python_env(), "PYTHONFAULTHANDLER": "1"}
        return subprocess.Popen(cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    started = clock()
    proc = start()
    plans: list[dict[str, object]] = []
    for i, name in enumerate(faults):
        if i == 0:
            time.sleep(settings.fault_delay)
        if name != "kill-switch":
            fault(run, name, settings)
            continue
        deadline = clock() + 30  # half-way: at a step between the two ends
        while run.switch_step() in ("zookeeper", "broker") and proc.poll() is None and clock() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            raise RuntimeError(f"migrate switch --to {to} ended (exit {proc.returncode}) before it could be killed")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        run.note(f"kill -9 of the switch command after {clock() - started:.1f}s")
        plans.append(switch_plan(run))
        run.note(f"migrate plan after the kill: {json.dumps(plans[-1])[:400]}; run again")
        proc = start()
    while True:
        try:
            out, err = proc.communicate(timeout=settings.switch_timeout + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise RuntimeError(
                f"migrate switch --to {to} did not end within {settings.switch_timeout + 30:.0f}s"
            ) from None
        if proc.returncode >= 0 or run.command_crashes >= 2:
            break
        # Killed by a signal of its own (librdkafka's crash under a coordinator request when the
        # coordinator's connection drops, confluentinc/librdkafka#4605): an operator runs it again.
        run.command_crashes += 1
        run.note(f"migrate switch --to {to} crashed (signal {-proc.returncode}): {err.strip()[-1500:]}")
        plans.append(switch_plan(run))
        run.note(f"migrate plan after the crash: {json.dumps(plans[-1])[:400]}; run again")
        proc = start()
    run.note(f"migrate switch --to {to}: exit {proc.returncode} in {clock() - started:.1f}s {out.strip()[-400:]}")
    if proc.returncode != 0:
        raise RuntimeError(f"migrate switch --to {to} failed (exit {proc.returncode}):\n{out}\n{err[-3000:]}")
    return plans


def live(run: AuditRun, settings: Settings) -> list[SwitchPoint]:
    """The live switch to broker coordination and back while the members run; returns the offsets at each end."""
    base = dict(settings.member_props)
    if settings.fault == "kill-leader":
        run.member_args = ["--log-group-leader"]
    if settings.fault == "add-topic":  # a wildcard subscription, which the new topic matches
        run.member_args, run.subscription = ["--whitelist"], f"{run.topic}.*"
    run.start_members(settings.members, base, "zk")
    run.begin()
    time.sleep(settings.warm)
    switch(run, "broker", settings, [settings.fault] if settings.fault != "none" else [])
    there = point(run, "at the switch to broker")
    time.sleep(settings.hold)
    switch(run, "zookeeper", settings)
    back = point(run, "at the switch back to zookeeper (Kafka behind on purpose: nothing commits to it there)")
    time.sleep(settings.hold)
    return [there, back]


PATHS = {"rolling": rolling, "live": live}
