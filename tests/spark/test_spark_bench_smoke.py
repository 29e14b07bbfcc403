"""Smoke runs of scripts/bench/spark_ingest.py (no timing asserted): both sources read the topic end to end
on local[2] and on a standalone cluster the script starts itself (the wheel shipped to its executors), and
a short latency run of our source (on local[2] and without Spark's source, to keep the file near 2 min:
the standalone start is paid once, above; the real measurement runs both sources on the cluster)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from spark_helpers import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

SCRIPT = str(ROOT / "scripts/bench/spark_ingest.py")


def run_bench(cluster, *args: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The script's output lines (it must exit 0)."""
    done = subprocess.run(
        [
            sys.executable,
            SCRIPT,
            "--smoke",
            "--zookeeper",
            cluster.zookeeper_connect,
            "--bootstrap",
            cluster.bootstrap_servers,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout.strip().splitlines()


def test_spark_ingest_benchmark_smoke(cluster) -> None:  # type: ignore[no-untyped-def]
    last = run_bench(cluster, "--messages", "20000", "--rounds", "1")[-1]
    assert re.fullmatch(
        r"ratio=\d+\.\d+ ours_rows_per_s=\d+ jvm_rows_per_s=\d+ rounds=1 master=local loadavg=\d+\.\d\d", last
    ), last


def test_spark_ingest_benchmark_on_a_standalone_cluster(cluster, wheel: Path) -> None:  # type: ignore[no-untyped-def]
    last = run_bench(cluster, "--standalone", "--wheel", str(wheel), "--messages", "20000", "--rounds", "1")[-1]
    found = re.fullmatch(
        r"ratio=(\d+\.\d+) ours_rows_per_s=(\d+) jvm_rows_per_s=(\d+) rounds=1 master=standalone loadavg=\d+\.\d\d",
        last,
    )
    assert found, last
    assert float(found[1]) > 0 and int(found[2]) > 0 and int(found[3]) > 0, last


def test_spark_latency_benchmark_smoke(cluster) -> None:  # type: ignore[no-untyped-def]
    """Ours packed and, with --task-per-range, a task per partition (the option's 0) beside it."""
    lines = run_bench(
        cluster,
        *("--latency", "2", "--warmup", "0.5", "--rate", "1000", "--trigger-ms", "500"),
        *("--no-jvm-latency", "--task-per-range", "--rounds", "1"),
    )
    found = re.fullmatch(
        r"ours_p50_ms=(-?\d+) ours_p99_ms=(-?\d+) per_range_p50_ms=(-?\d+) per_range_p99_ms=(-?\d+) "
        r"msg_per_s=1000 trigger_ms=500 master=local rounds=1 loadavg=\d+\.\d\d",
        lines[-1],
    )
    assert found, lines[-1]
    p50, p99, per_range_p50, per_range_p99 = map(int, found.groups())
    assert 0 < p50 <= p99 and 0 < per_range_p50 <= per_range_p99, lines[-1]
    assert sum(bool(re.match(r"\s+mean ms per batch: triggerExecution \d+, latestOffset \d+", ln)) for ln in lines) == 2
    assert sum(bool(re.match(r"\s+slowest batches: \d+: \{", ln)) for ln in lines) == 2, "\n".join(lines)
