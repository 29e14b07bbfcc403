"""AppMember: the audit's application, harness.switch_member, in a child process (SIGTERM: clean shutdown; kill(): kill -9)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.member_process import ChildMember

if TYPE_CHECKING:
    from harness.switch_run import AuditRun

# librdkafka's cgrp debug line (harness.switch_member --log-group-leader) in the member that leads the group
_LEADS = re.compile(r"JoinGroup response: GenerationId (\d+),.* LeaderId \S+ \(me\)")


class AppMember(ChildMember):
    """harness.switch_member in a child process (SIGTERM: clean shutdown; kill(): kill -9)."""

    def __init__(self, run: AuditRun, name: str, props: Mapping[str, object]) -> None:
        self.name = name
        out = run.workdir / f"{name}.deliveries"
        args = [
            sys.executable,
            "-m",
            "harness.switch_member",
            f"--zookeeper={run.cluster.zookeeper_connect}",
            f"--group={run.group}",
            f"--topic={run.subscription}",
            f"--out={out}",
            *run.member_args,
            *(f"--property={k}={v}" for k, v in props.items()),
        ]
        super().__init__(args, out, run.workdir / f"{name}.log")
        self._terminated = False

    def wait_ready(self, timeout: float = 90.0) -> None:
        self._read_ready(timeout, f"member {self.name} did not join within {timeout:.0f}s")

    def session(self) -> tuple[int, bytes]:
        sid, password = self.session_file.read_text().split()
        return int(sid, 16), bytes.fromhex(password)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM once (the member shuts down cleanly: commits, leaves the group)."""
        if self.proc is not None and self.proc.poll() is None and not self._terminated:
            self.proc.send_signal(signal.SIGTERM)
            self._terminated = True

    def leave(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"member {self.name} did not shut down within {timeout:.0f}s") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def leads_generation(self) -> int:
        """The last generation of the brokers' group this member was told it leads (-1: none), from its
        log's JoinGroup answers (harness.switch_member --log-group-leader)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return -1
        return max((int(m.group(1)) for m in _LEADS.finditer(text)), default=-1)
