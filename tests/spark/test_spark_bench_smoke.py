"""Smoke run of scripts/bench/spark_ingest.py: both sources read the topic end to end (no timing asserted)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from spark_helpers import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def test_spark_ingest_benchmark_smoke(cluster) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run([sys.executable, str(ROOT / "scripts/bench/spark_ingest.py"), "--messages", "20000",
                           "--repeat", "1", "--smoke", "--zookeeper", cluster.zookeeper_connect,
                           "--bootstrap", cluster.bootstrap_servers], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"ratio=\d+\.\d+ ours_rows_per_s=\d+ jvm_rows_per_s=\d+", last), last
