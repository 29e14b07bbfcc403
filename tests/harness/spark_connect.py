"""A Spark Connect server (local[N]) started from the pip pyspark install as a child JVM, and client sessions to it."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.spark_cluster import spark_home
from zkconsumer.testing.probes import free_port, start_until
from zkconsumer.testing.process import JavaProcess

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_LINE = "Spark Connect server started at"

# Written to <workdir>/hide/sitecustomize.py when packages are hidden: Python runs it at startup, after the
# site-packages .pth files, so it can drop what an editable install added (setuptools' finder on
# sys.meta_path) and any sys.path directory holding one of the packages. Zips on sys.path stay: the
# packages can then only come from what was shipped (a wheel or zip), as on a machine without them.
_HIDE = '''"""Hides {names} from this interpreter's installation (harness.spark_connect)."""
import os
import sys

HIDDEN = {names!r}


def _maps_hidden(finder):
    module = sys.modules.get(getattr(finder, "__module__", ""), None)
    mapping = getattr(finder, "MAPPING", None) or getattr(module, "MAPPING", None) or {{}}
    return bool(HIDDEN & set(mapping))


sys.meta_path[:] = [f for f in sys.meta_path if not _maps_hidden(f)]
sys.path[:] = [p for p in sys.path if not any(os.path.isdir(os.path.join(p or ".", n)) for n in HIDDEN)]
'''


class SparkConnectServer:
    """`spark-submit --class SparkConnectServer --master local[N]` on a free loopback port, owned by this
    process (not the daemonizing sbin/start-connect-server.sh): one process group, killed at exit.

    * `py_files`: passed as `--py-files` (spark.submit.pyFiles). NOTE: on a Connect server that does
      not put them on the sys.path of the Python workers serving sessions (see docs/spark.md, "Spark Connect").
    * `python_path`: added to the server's PYTHONPATH, which every Python worker it starts inherits
      (UDFs, data source planners, the streaming source's long-lived planner): server-wide code.
    * `hide_installed`: package names the server's Python must not import from this interpreter's
      installation (e.g. an editable install of the checkout), so only shipped code can provide them.

    Example::

        with SparkConnectServer(workdir, python_path=[wheel_zip], hide_installed=["zkconsumer"]) as server:
            with server.session(artifacts=[wheel_zip]) as spark:   # a Connect client session
                spark.range(3).collect()
    """

    def __init__(
        self,
        workdir: Path,
        *,
        master: str = "local[2]",
        memory: str = "768m",
        py_files: Sequence[Path] = (),
        python_path: Sequence[Path] = (),
        hide_installed: Sequence[str] = (),
        conf: Mapping[str, str] | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        home = spark_home()
        paths = [str(p) for p in python_path]
        if hide_installed:
            hide = self.workdir / "hide"
            hide.mkdir(exist_ok=True)
            (hide / "sitecustomize.py").write_text(_HIDE.format(names=set(hide_installed)))
            paths.insert(0, str(hide))
        self.env = {
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(paths),
        }
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.local.dir": str(self.workdir / "local"),  # session artifacts, shuffle: not /tmp
            "spark.pyspark.python": sys.executable,
            **(conf or {}),
        }
        args = [
            "--master",
            master,
            "--class",
            SERVER_CLASS,
            "--name",
            "zkconsumer-connect-tests",
            "--driver-memory",
            memory,
            *(a for k, v in settings.items() for a in ("--conf", f"{k}={v}")),
        ]
        if py_files:
            args += ["--py-files", ",".join(str(p) for p in py_files)]
        # JavaProcess has no cwd: a launcher runs spark-submit in the workdir, never in a checkout (a
        # Python worker started with -m has its cwd on sys.path). exec: the JVM keeps the launcher's pid.
        launcher = self.workdir / "spark-submit.sh"
        launcher.write_text(
            f"#!/bin/sh\ncd {shlex.quote(str(self.workdir))} && "
            f'exec {shlex.quote(str(home / "bin" / "spark-submit"))} "$@"\n'
        )
        launcher.chmod(0o755)
        self.process = JavaProcess(
            "spark-connect", args, log_path=self.workdir / "connect-server.log", java=str(launcher), env=self.env
        )

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> SparkConnectServer:
        """Launch the JVM; return once it logged that it serves
        and its gRPC port accepts connections. Raises ClusterStartError with the log tail otherwise."""
        start_until(self.process, self._ready, timeout, f"serving on {self.url}", stop_timeout=20.0)
        return self

    def _ready(self) -> bool:
        try:
            logged = READY_LINE in self.process.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return False
        if not logged:
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2.0):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """SIGTERM to the process group (the JVM and its Python workers), SIGKILL after 20 s."""
        self.process.stop(timeout=20.0)

    def __enter__(self) -> SparkConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return f"--- {self.process.log_path}:\n{self.process.log_tail(lines)}"

    @contextlib.contextmanager
    def session(self, *, artifacts: Sequence[Path] = ()) -> Iterator[Any]:
        """A new Connect client session (its own server-side session and artifacts), with `artifacts`
        added as py-files (SparkSession.addArtifacts(pyfile=True)); stopped on exit.

        A remote session sets SPARK_CONNECT_MODE_ENABLED in os.environ for good, which turns later
        classic sessions and pyspark.sql.functions in this process into Connect ones: restored on exit."""
        from pyspark.sql import SparkSession

        saved = {k: os.environ.get(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
        spark = None
        try:
            spark = SparkSession.builder.remote(self.url).create()
            for path in artifacts:
                spark.addArtifacts(str(path), pyfile=True)
            yield spark
        finally:
            try:
                if spark is not None:
                    spark.stop()
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
