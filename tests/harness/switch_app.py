"""AppMember: the audit's application, harness.switch_member, in a child process (SIGTERM: clean shutdown; kill(): kill -9)."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from harness import python_env
from zkconsumer.testing.process import die_with_parent

if TYPE_CHECKING:
    from harness.switch_run import AuditRun

# librdkafka's cgrp debug line (harness.switch_member --log-group-leader) in the member that leads the group
_LEADS = re.compile(r"JoinGroup response: GenerationId (\d+),.* LeaderId \S+ \(me\)")


class AppMember:
    """harness.switch_member in a child process (SIGTERM: clean shutdown; kill(): kill -9)."""

    def __init__(self, run: AuditRun, name: str, props: Mapping[str, object]) -> None:
        self.name = name
        self.out = run.workdir / f"{name}.deliveries"
        self.log = run.workdir / f"{name}.log"
        self.consumer_id = ""
        self._args = [
            sys.executable,
            "-m",
            "harness.switch_member",
            f"--zookeeper={run.cluster.zookeeper_connect}",
            f"--group={run.group}",
            f"--topic={run.subscription}",
            f"--out={self.out}",
            *run.member_args,
            *(f"--property={k}={v}" for k, v in props.items()),
        ]
        self.proc: subprocess.Popen[str] | None = None
        self._terminated = False

    def spawn(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self._args,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=python_env(),
                # the death signal is tied to the forking thread: only the main thread's children get it
                preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None,
            )

    def wait_ready(self, timeout: float = 90.0) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            raise RuntimeError(f"member {self.name} did not join within {timeout:.0f}s; log tail:\n{self.log_tail()}")
        self.consumer_id = json.loads(line)["consumer_id"]

    def session(self) -> tuple[int, bytes]:
        sid, password = Path(str(self.out) + ".session").read_text().split()
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

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
