"""The short seeded run of scripts/netfaults.py (each fault kind once, zkconsumer and Scala members): its verdict and last line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]
ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"(\d+\.\d+)"
LAST = re.compile(
    rf"events=(\d+) lost=(\d+) overlaps=(\d+) duplicates=(\d+) ours_overlap_s={NUMBER} "
    rf"scala_overlap_s=({NUMBER[1:-1]}|-) ours_deliver_after_cut_s={NUMBER} max_converge_s={NUMBER}"
)


def test_each_fault_kind_once_with_scala_beside(tmp_path) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/netfaults.py"), "--events", "5", "--seed", "1", "--scala"]
        + ["--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(done.stdout)
    assert done.returncode in (0, 1), (
        f"harness error ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    last = done.stdout.strip().splitlines()[-1]
    match = LAST.fullmatch(last)
    assert match, last
    events, lost, overlaps, duplicates = map(int, match.groups()[:4])
    ours_overlap, scala_overlap, after_cut = match.group(5), match.group(6), float(match.group(7))
    assert events == 5 and scala_overlap != "-"
    lease = float(re.search(r"lease_s=(\d+\.\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert (lost, overlaps, duplicates, float(ours_overlap)) == (0, 0, 0, 0.0), done.stdout[-4000:]
    assert 0.0 < after_cut <= lease, last  # the zk-cut member delivered something, then stopped in time
    assert done.returncode == 0, done.stdout[-4000:]
