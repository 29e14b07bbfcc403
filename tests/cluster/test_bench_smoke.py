"""Smoke runs of the benchmark scripts: they work end to end (numbers are not asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def last_line(script: str, *args: str, timeout: float) -> str:
    """Run scripts/bench/<script> to its end (it must succeed) and return its last output line."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench" / script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_throughput_benchmark_smoke() -> None:
    last = last_line("throughput.py", "--messages", "20000", "--smoke", timeout=300)
    assert re.fullmatch(
        r"ratio=\d+\.\d+ batch_ratio=\d+\.\d+ scala_ratio=\d+\.\d+ iterator_scala_ratio=\d+\.\d+ "
        r"default_ratio=\d+\.\d+ handed_ratio=\d+\.\d+ batch_handed_ratio=\d+\.\d+ iterator_handed_ratio=\d+\.\d+ "
        r"a3_ratio=\d+\.\d+ a4_ratio=\d+\.\d+ fetcher_thread_ratio=\d+\.\d+ raw_msgs_per_s=\d+ iterator_msgs_per_s=\d+ streams_msgs_per_s=\d+ "
        r"batch_msgs_per_s=\d+ scala_msgs_per_s=\d+ "
        r"a_cpu_ns=\d+ a2_cpu_ns=\d+ a3_cpu_ns=\d+ a4_cpu_ns=\d+ b_cpu_ns=\d+ b0_cpu_ns=\d+ d_cpu_ns=\d+ loadavg=\d+\.\d+",
        last,
    ), last


def test_delivery_cost_smoke() -> None:
    """No cluster: CPU per message of the delivery paths, rows a3/a4 of throughput.py included."""
    last = last_line("delivery_cost.py", "--messages", "40000", "--repeat", "1", timeout=120)
    names = (
        "loop split iterator batches iterator_overhead batches_overhead errors last_dict last_msgs last_rindex "
        "last_spans a3 a4_fold1 a4 a3_overhead a4_overhead"
    ).split()
    assert re.fullmatch(" ".join(rf"{k}_ns=-?\d+\.\d" for k in names) + r" loadavg=\d+\.\d+", last), last


def test_handover_benchmark_smoke(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/handover.py"),
            "--members",
            "2",
            "--partitions",
            "4",
            "--events",
            "2",
            "--dwell",
            "0.5",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()[-2:]
    for mode, line in zip(("incremental", "stop-the-world"), lines):
        assert re.fullmatch(
            rf"mode={mode} events=2 interrupted_per_event=\d+\.\d+ unowned_median_s=\d+\.\d+ unowned_p99_s=\d+\.\d+ "
            r"unowned_max_s=\d+\.\d+ leave_unowned_p99_s=\d+\.\d+ join_unowned_p99_s=\d+\.\d+ "
            r"idle_median_s=\d+\.\d+ idle_max_s=\d+\.\d+",
            line,
        ), line
    # Stop-the-world interrupts every partition at every event; incremental only those that move.
    interrupted = [float(re.search(r"interrupted_per_event=(\S+)", line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert interrupted[1] >= 4.0 > interrupted[0]


@pytest.mark.interop
def test_mixed_handover_benchmark_smoke(tmp_path: Path) -> None:
    last = last_line(
        "handover.py",
        "--mixed",
        "--members",
        "2",
        "--partitions",
        "4",
        "--events",
        "4",
        "--dwell",
        "0.5",
        "--workdir",
        str(tmp_path),
        timeout=900,
    )
    found = re.fullmatch(
        r"mixed=1 handovers_zk_scala=(\d+) stale_zk_scala=\d+ stale_zk_scala_nolinger=\d+ "
        r"zk_reg_own_median_s=\d+\.\d+ scala_reg_own_median_s=\d+\.\d+ "
        r"scala_reg_own_median_nolinger_s=\d+\.\d+ unowned_p99_s=\d+\.\d+ stale_handovers=\d+ overlaps=\d+ "
        r"stranded=\d+ gave_up=\d+ handovers_zk_scala_lingered=\d+ lingers=\d+ linger_median_s=\d+\.\d+ linger_max_s=\d+\.\d+ handovers_zk_to_scala_joiner=\d+ loadavg=\d+\.\d+",
        last,
    )
    assert found, last
    assert int(found.group(1)) >= 1, "the zkconsumer member never handed a partition to a Scala member"


def test_soak_benchmark_smoke() -> None:
    last = last_line("soak.py", "--seconds", "12", "--smoke", timeout=300)
    found = re.fullmatch(
        r"rss_start_mb=\d+ rss_warm_mb=\d+ rss_max_mb=\d+ rss_end_mb=\d+ bound_mb=\d+ "
        r"consumed=(\d+) seconds=12 loadavg=\d+\.\d+",
        last,
    )
    assert found and int(found.group(1)) > 0, last


def test_scale_benchmark_smoke(tmp_path: Path) -> None:
    last = last_line(
        "scale.py",
        "--cells",
        "2x8",
        "--repeats",
        "1",
        "--idle",
        "2",
        "--settle",
        "0.2",
        "--watchdog-ms",
        "500",
        "--workdir",
        str(tmp_path),
        timeout=300,
    )
    found = re.fullmatch(
        r"cells=1 worst_join_s=\d+\.\d+ worst_leave_s=\d+\.\d+ idle_zk_req_per_member_s=\d+\.\d+ "
        r"zk_req_per_change_per_member=(\d+\.\d+) cpu_s_per_member_per_change=\d+\.\d+ "
        r"loadavg=\d+\.\d+",
        last,
    )
    assert found and float(found.group(1)) > 0, last


def test_matrix_script_smoke() -> None:
    """scripts/matrix.py counts a pairing's results and fails when a test does (cheap tests stand in
    for the real ones, which run on the old pairings in scripts/test.sh)."""

    def run(tests: str, *more: str, pairings: str = "3.9.1/bundled") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "scripts/matrix.py"), "--pairings", pairings, "--tests", tests, *more],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )

    good = run("tests/unit/test_watchdog.py")
    assert good.returncode == 0, good.stdout[-2000:]
    passed = int(re.search(r"(\d+) passed", good.stdout).group(1))  # type: ignore[union-attr]
    assert good.stdout.strip().splitlines()[-1] == f"pairings=1 passed={passed} failed=0"
    bad = run("tests/unit/no_such_test_file.py")
    assert bad.returncode == 1 and bad.stdout.strip().splitlines()[-1] == "pairings=1 passed=0 failed=1", bad.stdout
    # --jobs 2 (scripts/test.sh's old pairings): both at once, each pairing's output whole under its header.
    both = run("tests/unit/test_watchdog.py", "--jobs", "2", pairings="3.9.1/bundled,1.1.1/3.4.14")
    assert both.returncode == 0, both.stdout[-2000:]
    assert both.stdout.strip().splitlines()[-1] == f"pairings=2 passed={2 * passed} failed=0", both.stdout[-2000:]
    sections = re.split(r"^=== Kafka .*$", both.stdout, flags=re.M)
    assert len(sections) == 3 and all(f"{passed} passed" in part for part in sections[1:]), both.stdout[-2000:]


def test_zk_request_cost_smoke() -> None:
    last = last_line("zk_request_cost.py", "--requests", "200", timeout=180)
    kinds = ("create", "get", "exists_watch", "set", "get_sync", "children", "delete")
    assert re.fullmatch(" ".join(rf"{k}_cpu_us=\d+\.\d" for k in kinds) + r" loadavg=\d+\.\d+", last), last


def test_reconnect_gap_smoke() -> None:
    """A same-session reconnect holds delivery until the owner nodes are read again, then resumes
    with every partition still owned (the script fails otherwise)."""
    last = last_line("reconnect_gap.py", "--rounds", "2", "--partitions", "4", timeout=180)
    assert re.fullmatch(
        r"gap_median_ms=\d+\.\d gap_max_ms=\d+\.\d drop_to_delivery_median_ms=\d+\.\d rounds=2 partitions=4 "
        r"loadavg=\d+\.\d+",
        last,
    ), last


def test_lease_renewal_cost_smoke() -> None:
    last = last_line("lease_renewal_cost.py", "--members", "2", "--seconds", "2", "--rounds", "1", timeout=240)
    kinds = " ".join(
        rf"{k}_cpu_us_per_member_s=\d+ {k}_p99_ms=\d+\.\d {k}_get_p99_ms=\d+\.\d" for k in ("sync", "check")
    )
    assert re.fullmatch(rf"release=3\.8 members=2 {kinds} loadavg=\d+\.\d+", last), last


def test_latency_benchmark_smoke() -> None:
    """Every contender, Scala's JVM included, sees every acknowledged message (the script fails otherwise)."""
    last = last_line("latency.py", "--rates", "1000", "--seconds", "1", "--rounds", "1", timeout=300)
    quantiles = " ".join(
        rf"{name}_{q}_ms=-?\d+\.\d\d"
        for name in ("raw", "iterator", "batches", "scala")
        for q in ("p50", "p99", "p999")
    )
    assert re.fullmatch(rf"rate=1000 {quantiles} rounds=1 loadavg=\d+\.\d\d", last), last


def test_beside_scala_benchmark_smoke() -> None:
    """Every contender reads the whole topic (the Scala JVM's count is checked by the script)."""
    last = last_line("beside_scala.py", "--messages", "20000", "--rounds", "1", "--smoke", timeout=300)
    rates = " ".join(rf"{name}_msgs_per_s=\d+" for name in ("raw", "iterator", "batches", "scala"))
    ratios = " ".join(
        rf"{name}=\d+\.\d+" for name in ("iterator_raw", "batches_raw", "iterator_scala", "batches_scala")
    )
    assert re.fullmatch(rf"{ratios} {rates} rounds=1 messages=20000 loadavg=\d+\.\d\d", last), last
