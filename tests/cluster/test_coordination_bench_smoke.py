"""Smoke run of scripts/bench/coordination.py (ZooKeeper vs broker coordination): it works end to end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def test_coordination_benchmark_smoke() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/coordination.py"),
            "--messages",
            "5000",
            "--rate",
            "500",
            "--seconds",
            "1",
            "--rounds",
            "1",
            "--warmup",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert sum(line.startswith("round 1 ") for line in lines) == 2, lines  # both contenders ran
    number = r"\d+(\.\d+)?"
    assert re.fullmatch(
        rf"zk_msgs_per_s=\d+ broker_msgs_per_s=\d+ throughput_ratio={number} zk_p50_ms={number} "
        rf"zk_p99_ms={number} broker_p50_ms={number} broker_p99_ms={number} p99_ratio={number} rounds=1 "
        rf"loadavg={number}",
        lines[-1],
    ), lines[-1]
