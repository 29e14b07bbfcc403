"""Smoke runs of the exporter's benchmarks at tiny sizes: the load script and the comparison with Burrow work end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.ecosystem]
ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"\d+(\.\d+)?"


def last_line(script: str, *args: str, timeout: float) -> str:
    """Run scripts/bench/<script> to its end (it must succeed) and return its last output line."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench" / script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_exporter_beside_burrow_smoke() -> None:
    last = last_line(
        "exporter_vs_burrow.py",
        *("--groups", "3", "--partitions", "2", "--freshness", "1", "--window", "5"),
        *("--rounds", "1", "--seconds", "2", "--commits-per-s", "5", "--probes", "1"),
        timeout=240,
    )
    keys = (
        "groups partitions freshness_s rounds commits_per_s cores burrow_ready_s exporter_first_s exporter_zk_rps "
        "burrow_zk_rps exporter_lag_s burrow_lag_s exporter_lag_max_s burrow_lag_max_s exporter_rss_mb burrow_rss_mb exporter_hwm_mb burrow_hwm_mb loadavg"
    ).split()
    assert re.fullmatch(" ".join(rf"{k}={NUMBER}" for k in keys), last), last
    values = dict(pair.split("=") for pair in last.split())
    assert float(values["exporter_rss_mb"]) > 0 and float(values["burrow_rss_mb"]) > 0
    assert float(values["exporter_zk_rps"]) > 0 and float(values["burrow_zk_rps"]) > 0  # pings at the least


def test_exporter_load_smoke() -> None:
    last = last_line(
        "exporter_load.py",
        *("--groups", "3", "--partitions", "2", "--interval", "1", "--window", "5"),
        *("--seconds", "2", "--commits-per-s", "5", "--scrapes", "2"),
        timeout=180,
    )
    assert re.fullmatch(
        r"groups=3 partitions=2 series=\d+ .* rss_mb=\d+ rss_writer_mb=\d+ rss_now_mb=\d+ loadavg=\d+\.\d+", last
    ), last
