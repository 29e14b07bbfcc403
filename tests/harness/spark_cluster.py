"""A Spark standalone cluster (a master and its workers) started from the pip pyspark install, on loopback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zkconsumer.testing.probes import free_port, wait_until
from zkconsumer.testing.process import JavaProcess

# An executor's log lines that start a task ("Running task 0.0 in stage 3.0 (TID 12)") or end one
# (Finished / Exception in / killed task ... (TID 12)).
_TASK_EVENT = re.compile(r"(Running|Finished|Exception in|killed) task [^\n]*?\(TID (\d+)\)")


def build_wheel(out: Path, root: Path, timeout: float = 300.0) -> Path:
    """The checkout at `root` (zkconsumer, zkconsumer.spark in it) as users ship it: a wheel, renamed .zip (PySpark
    puts only .zip, .egg and .jar py-files on sys.path; a pure-Python wheel is a zip)."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip wheel {root} failed:\n{done.stderr[-3000:]}")
    (built,) = out.glob("zkconsumer-*.whl")
    shipped = built.with_suffix(".zip")
    built.replace(shipped)
    return shipped


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class SparkStandalone:
    """`workers` workers of `cores` cores and `memory` each, and a master, as the pip install ships
    them (bin/spark-class; there is no sbin/start-master.sh). Logs and work dirs go to `workdir`.

    Example::

        with SparkStandalone(workdir, workers=2) as spark:
            spark.submit(["job.py", ...], py_files=[wheel])   # spark-submit --master spark.url
            spark.executor_pids()                             # for kill -9
    """

    def __init__(self, workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port, self.ui_port = free_port(), free_port()
        home = spark_home()
        self._spark_class = str(home / "bin" / "spark-class")
        self.env = {
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.workdir),
            # Executors' Python workers: this interpreter (it has pyarrow, confluent-kafka, kazoo).
            "PYSPARK_PYTHON": sys.executable,
        }
        self.master = JavaProcess(
            "spark-master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.ui_port),
            ],
            log_path=self.workdir / "master.log",
            java=self._spark_class,
            env=self.env,
        )
        self.workers = [
            JavaProcess(
                f"spark-worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(self.workdir / f"worker-{i}"),
                    "--webui-port",
                    str(free_port()),
                ],
                log_path=self.workdir / f"worker-{i}.log",
                java=self._spark_class,
                env=self.env,
            )
            for i in range(workers)
        ]

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> SparkStandalone:
        """Start the master, then the workers; return once every worker registered as ALIVE."""
        try:
            self.master.start()
            wait_until(lambda: self.status() is not None, timeout, "answering on its web UI", self.master)
            for worker in self.workers:
                worker.start()
            for worker in self.workers:
                wait_until(
                    lambda: self.alive_workers() >= len(self.workers),
                    timeout,
                    f"{len(self.workers)} workers registered",
                    worker,
                )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Workers first (each takes its executors with it: one process group), then the master."""
        for process in [*self.workers, self.master]:
            process.stop(timeout=15.0)

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> dict[str, Any] | None:
        """The master's JSON status (workers, active apps); None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=3.0) as answer:
                return json.load(answer)
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        status = self.status() or {}
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def executor_pids(self) -> list[int]:
        """pids of the executor JVMs the workers launched (children running CoarseGrainedExecutorBackend)."""
        parents = {w.pid for w in self.workers if w.pid is not None}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid in parents and b"CoarseGrainedExecutorBackend" in cmdline:
                found.append(int(entry.name))
        return sorted(found)

    @staticmethod
    def tasks_running(pid: int) -> set[int]:
        """Task ids the executor `pid` has started and not yet ended, read from the log the worker
        keeps of it (<work dir>/stderr, the executor's cwd; executors log task starts and ends at INFO,
        while the test drivers log at WARN). Empty once the process is gone."""
        try:
            text = (Path(os.readlink(f"/proc/{pid}/cwd")) / "stderr").read_text(errors="replace")
        except OSError:
            return set()
        running: set[int] = set()
        for match in _TASK_EVENT.finditer(text):
            tid = int(match.group(2))
            if match.group(1) == "Running":
                running.add(tid)
            else:
                running.discard(tid)
        return running

    def submit_command(
        self, args: Sequence[str], *, py_files: Sequence[Path] = (), conf: dict[str, str] | None = None
    ) -> tuple[list[str], dict[str, str]]:
        """The spark-submit command line and environment for a Python driver on this cluster."""
        settings = {
            "spark.ui.enabled": "false",
            "spark.executor.memory": "512m",
            "spark.pyspark.python": sys.executable,
            **(conf or {}),
        }
        cmd = [
            str(Path(sys.executable).with_name("spark-submit")),
            "--master",
            self.url,
            "--driver-memory",
            "512m",
            *(a for k, v in settings.items() for a in ("--conf", f"{k}={v}")),
        ]
        if py_files:
            cmd += ["--py-files", ",".join(str(p) for p in py_files)]
        # --py-files reaches the Python driver and the executors, not the Python data source planner
        # processes the driver JVM starts: those inherit the JVM's PYTHONPATH, so the same files go
        # there too. Nothing else may supply zkconsumer: an editable install of the checkout in this
        # interpreter's site-packages is hidden from every process of the application.
        paths = [str(self._hide_editable_installs()), *(str(p) for p in py_files)]
        env = {**os.environ, **self.env, "PYTHONPATH": os.pathsep.join(paths)}
        return [*cmd, *args], env

    def _hide_editable_installs(self) -> Path:
        """A directory whose sitecustomize.py drops setuptools' editable-install finders from sys.meta_path."""
        folder = self.workdir / "no-editable-installs"
        folder.mkdir(exist_ok=True)
        (folder / "sitecustomize.py").write_text(
            '"""Hide editable installs (setuptools __editable__ finders): test code must come from --py-files."""\n'
            "import sys\n\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if '_Editable' not in getattr(f, '__name__', '')]\n"
        )
        return folder

    def log_tails(self, lines: int = 20) -> str:
        return "\n".join(f"--- {p.name} ({p.log_path}):\n{p.log_tail(lines)}" for p in [self.master, *self.workers])
