"""A real Prometheus server (Debian's package) scraping the exporter, queried over its HTTP API; and promtool."""

from __future__ import annotations

import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from zkconsumer.testing.probes import ClusterStartError, free_port, get_json, start_until, wait_until
from zkconsumer.testing.process import JavaProcess

INSTALL_HINT = "install Debian's package prometheus (apt-get install prometheus; scripts/setup-env.sh does it)"
JOB = "zkconsumer-exporter"

_CONFIG = """\
global:
  scrape_interval: {scrape_interval}
  evaluation_interval: {scrape_interval}
rule_files:
  - {rules}
scrape_configs:
  - job_name: {job}
    scrape_interval: {scrape_interval}
    scrape_timeout: {scrape_interval}
    static_configs:
      - targets: ["{target}"]
"""


def program(name: str) -> str:
    """Path of `prometheus` or `promtool`; ClusterStartError naming the package when missing."""
    found = shutil.which(name)
    if found is None:
        raise ClusterStartError(f"{name} is not on PATH: {INSTALL_HINT}")
    return found


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run promtool with `args`; its exit status and output, never raising on failure."""
    return subprocess.run([program("promtool"), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


class Prometheus:
    """One Prometheus process scraping `target` (host:port of the exporter) every `scrape_interval`,
    with `rules` loaded (the exporter's alert rules).

    Example::

        with Prometheus("127.0.0.1:9308", workdir, rules=ALERTS) as prom:
            prom.wait_for_target_up()
            print(prom.query('zkconsumer_group_lag{group="billing"}'))
    """

    def __init__(self, target: str, workdir: Path, *, rules: Path, scrape_interval: str = "1s") -> None:
        self.port = free_port()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(_CONFIG.format(scrape_interval=scrape_interval, rules=rules, job=JOB, target=target))
        self.process = JavaProcess(
            "prometheus",
            [
                f"--config.file={config}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                "--log.level=info",
            ],
            log_path=self.workdir / "prometheus.log",
            java=program("prometheus"),
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Prometheus:
        """Start Prometheus; return once it says it is ready."""
        start_until(self.process, self._ready, timeout, "answering /-/ready")
        return self

    def stop(self) -> None:
        self.process.stop(timeout=10.0)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    def get(self, path: str, **params: str) -> dict[str, Any]:
        """GET one of Prometheus's API endpoints; its JSON answer (errors included)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return dict(get_json(self.url + path + query, 10.0))

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector `promql` evaluates to now: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        answer = self.get("/api/v1/query", query=promql)
        if answer.get("status") != "success":
            raise AssertionError(f"Prometheus refused {promql!r}: {answer}")
        return list(answer["data"]["result"])

    def values(self, promql: str, *labels: str) -> dict[tuple[str, ...], float]:
        """label values -> the sample's value, for each series `promql` returns."""
        return {tuple(r["metric"].get(k, "") for k in labels): float(r["value"][1]) for r in self.query(promql)}

    def targets(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/targets")["data"]["activeTargets"])

    def rules(self) -> list[dict[str, Any]]:
        """Every loaded rule, each with its group's name, its state and health."""
        groups = self.get("/api/v1/rules")["data"]["groups"]
        return [{**rule, "group": g["name"]} for g in groups for rule in g["rules"]]

    def wait_for_target_up(self, timeout: float = 60.0) -> None:
        def up() -> bool:
            return any(t.get("health") == "up" for t in self.targets())

        wait_until(up, timeout, f"the exporter's target up ({self.targets()})", self.process)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2.0) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False
