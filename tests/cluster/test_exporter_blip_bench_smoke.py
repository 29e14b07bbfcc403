"""A smoke run of scripts/bench/exporter_blip.py at a tiny size: both contenders run, and the re-armed one re-reads only the commits."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster]
ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"\d+(\.\d+)?"


def test_exporter_blip_bench_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/exporter_blip.py"), "--groups", "3", "--partitions", "4"]
        + ["--commits", "2", "--rounds", "1", "--cut", "0.3"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    keys = "groups partitions commits rounds rearm_requests stock_requests rearm_fresh_s stock_fresh_s loadavg".split()
    assert re.fullmatch(" ".join(rf"{k}={NUMBER}" for k in keys), last), last
    values = {k: float(v) for k, v in (pair.split("=") for pair in last.split())}
    # Re-armed: the two nodes written during the cut (fewer if both fell on one); stock: every node of 3 groups.
    assert 1 <= values["rearm_requests"] <= 2 and values["stock_requests"] >= 3 * 4
