"""The project's own test harness (not shipped): chaos driver, Scala member, subprocess members, ZooKeeper model.

Tests import it as ``harness`` (pytest puts tests/ on sys.path; scripts insert it themselves). A child
Python that runs ``-m harness.<module>`` needs `python_env()`: this interpreter's environment with
tests/ and the folder this process imported zkconsumer from first on PYTHONPATH, so the child imports
the same harness and the same zkconsumer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import zkconsumer

TESTS = Path(__file__).resolve().parent.parent  # tests/: the folder holding this package
ROOT = TESTS.parent  # the checkout


def python_path(existing: str | None = None) -> str:
    """PYTHONPATH with tests/ and zkconsumer's folder first (for `python -m harness.<module>` children)."""
    paths = [str(TESTS), str(Path(zkconsumer.__file__).resolve().parent.parent)]
    rest = (existing if existing is not None else os.environ.get("PYTHONPATH", "")).split(os.pathsep)
    return os.pathsep.join(paths + [p for p in rest if p and p not in paths])


def python_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) with `python_path()` as its PYTHONPATH."""
    base = dict(os.environ if env is None else env)
    base["PYTHONPATH"] = python_path(base.get("PYTHONPATH", ""))
    return base
