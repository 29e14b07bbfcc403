"""Smoke runs of the benchmark scripts: they work end to end (numbers are not asserted)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def test_throughput_benchmark_smoke() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts/bench/throughput.py"), "--messages", "20000",
                           "--smoke"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"ratio=\d+\.\d+ raw_msgs_per_s=\d+ iterator_msgs_per_s=\d+ "
                        r"streams_msgs_per_s=\d+ batch_msgs_per_s=\d+", last), last
