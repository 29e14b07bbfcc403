"""ChildMember: a group member in a child process of its own (a harness module that prints one JSON line once it joined), with its log and its session file."""

from __future__ import annotations

import json
import select
import subprocess
import threading
from pathlib import Path

from harness import python_env
from zkconsumer.testing.process import die_with_parent


class ChildMember:
    """The process of harness.chaos_member or harness.switch_member: `args` its command line, its
    deliveries in `out`, its stderr appended to `log`; `consumer_id` once it said it joined."""

    def __init__(self, args: list[str], out: Path, log: Path) -> None:
        self._args = args
        self.out = out
        self.log = log
        self.consumer_id = ""
        self.proc: subprocess.Popen[str] | None = None

    def spawn(self) -> None:
        """Start the process. The death signal is tied to the forking thread, so it is armed only
        when the main thread forks (a child of another thread would die with that thread)."""
        arm = threading.current_thread() is threading.main_thread()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self._args,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=python_env(),
                preexec_fn=die_with_parent if arm else None,
            )

    def _read_ready(self, timeout: float, failed: str) -> None:
        """Until the member says who it is (after its first rebalance): its consumer id. After
        `timeout` s of silence it is killed and RuntimeError(`failed`, with its log's tail) raised."""
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            raise RuntimeError(f"{failed}; log tail:\n{self.log_tail()}")
        self.consumer_id = json.loads(line)["consumer_id"]

    @property
    def session_file(self) -> Path:
        """Where the member keeps its ZooKeeper session's id and password (hex), for the driver."""
        return self.out.parent / (self.out.name + ".session")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
