"""One child JVM: started in its own process group, logged to a file, stopped or killed on demand."""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

_LIVE: weakref.WeakSet[JavaProcess] = weakref.WeakSet()
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """In a forked child before exec: die when the parent dies (PR_SET_PDEATHSIG; Linux only)."""
    # Linux only: if the test process is kill -9'd, the kernel kills the JVM too (no orphans).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_LIVE):
        proc.kill()


class JavaProcess:
    """A java command run as a child process whose stdout+stderr go to `log_path`.

    Example::

        zk = JavaProcess("zookeeper", ["-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg],
                         log_path=workdir / "zookeeper.log")
        zk.start(); ...; zk.stop()
    """

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        *,
        log_path: Path,
        java: str = "java",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.args = list(args)
        self.env = dict(env or {})  # added to this process's environment
        self.log_path = Path(log_path)
        self.java = java
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self, *, detach: bool = False) -> None:
        """Launch the JVM. `detach` lets it outlive this Python process (for `testing up`)."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n==== starting {self.name} at {time.strftime('%H:%M:%S')} ====\n".encode())
            log.flush()
            # PDEATHSIG fires when the forking *thread* ends, so only arm it from the main thread.
            arm = not detach and threading.current_thread() is threading.main_thread()
            self._popen = subprocess.Popen(
                [self.java, *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent if arm else None,
                env={**os.environ, **self.env} if self.env else None,
            )
        if not detach:
            _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL if it does not exit within `timeout`."""
        self._signal(signal.SIGTERM)
        if not self._wait(timeout):
            self.kill()

    def kill(self) -> None:
        """SIGKILL the whole process group: what a crashed machine looks like to its peers."""
        self._signal(signal.SIGKILL)
        # A JVM in the middle of an fsync on a starved machine took over 10 s to go.
        self._wait(60.0)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return f"(no log at {self.log_path})"
        return "\n".join(text.splitlines()[-lines:])

    def _signal(self, sig: int) -> None:
        if self.running and self._popen is not None:
            try:
                os.killpg(self._popen.pid, sig)
            except ProcessLookupError:
                pass

    def _wait(self, timeout: float) -> bool:
        if self._popen is None:
            return True
        try:
            self._popen.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
