"""Smoke run of scripts/chaos.py: it runs end to end and its last line and exit status agree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]
ROOT = Path(__file__).resolve().parents[2]
LAST = re.compile(
    r"events=(\d+) produced=(\d+) lost=(\d+) overlaps=(\d+) duplicates=(\d+) "
    r"max_unowned_s=(\d+\.\d+) max_converge_s=(\d+\.\d+|inf)"
)


def test_chaos_script_smoke(tmp_path) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/chaos.py"),
            "--events",
            "6",
            "--members",
            "3",
            "--partitions",
            "8",
            "--seed",
            "7",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), (
        f"harness error ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    last = done.stdout.strip().splitlines()[-1]
    match = LAST.fullmatch(last)
    assert match, last
    events, produced, lost, overlaps, duplicates = map(int, match.groups()[:5])
    assert events == 6 and produced > 0
    if lost or overlaps or duplicates or match.group(7) == "inf":
        assert done.returncode == 1, last
    else:  # status 1 with a clean line: another failure (a member crashed...), reported above the table
        assert done.returncode == 0 or "INVARIANTS BROKEN" in done.stdout, done.stdout[-3000:]
