"""A short run of scripts/bench/exporter_exposition.py: both expositions parse to the same samples, and the last line is key=value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_exposition_bench_runs_and_reports() -> None:
    script = ROOT / "scripts" / "bench" / "exporter_exposition.py"
    args = ["--groups", "2", "--partitions", "3", "--rounds", "2"]
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    last = dict(item.split("=", 1) for item in result.stdout.strip().splitlines()[-1].split())
    assert last["groups"] == "2" and int(last["series"]) > 2 * 3 * 6
    assert float(last["hand_median_s"]) > 0 and float(last["client_median_s"]) > 0
