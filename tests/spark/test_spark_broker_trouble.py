"""Streaming queries on a three-broker cluster: scripts/bench/spark_trouble.py's scenarios, shortened, on local[2]
(a rolling restart of every broker, an AvailableNow run behind a crashed run's owner nodes). Its other
scenarios run in the script only: a partition offline (100 s as a test, a broker restart included; finding 3's
regressions are tests/unit/test_spark_broker_offsets.py's) and a leader killed under startingTimestamp."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from spark_helpers import ROOT

from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.pytest_plugin import running

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def load_script() -> ModuleType:
    """The script as a module: its scenarios run here on the session's Spark and the module's cluster."""
    spec = importlib.util.spec_from_file_location("spark_trouble", ROOT / "scripts" / "bench" / "spark_trouble.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


trouble = load_script()


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three brokers, every topic on all three (min.insync.replicas 2): one may restart at a time."""
    cluster = LocalCluster(
        brokers=3, chroot="/spark3", replication_factor=3, workdir=tmp_path_factory.mktemp("three-brokers")
    )
    with running(cluster, "the three-broker cluster") as started:
        yield started


def passed(outcome: Any) -> None:
    assert not outcome.failures, (
        f"{outcome.name}: {outcome.failures}; Spark: {outcome.said}; rows {outcome.rows} of {outcome.expected}, "
        f"lost {outcome.lost}, duplicated {outcome.duplicated}, strays {outcome.strays}; {outcome.notes}"
    )
    assert outcome.rows == outcome.expected > 0 and not outcome.silent_success


def test_a_query_lives_through_a_rolling_restart_of_every_broker_with_every_row_once(
    spark, cluster3: LocalCluster, tmp_path: Path
) -> None:
    passed(trouble.rolling(spark, cluster3, tmp_path))


def test_an_available_now_run_waits_for_a_crashed_runs_owner_nodes_and_reads_every_row(
    spark, cluster3: LocalCluster, tmp_path: Path
) -> None:
    """The run joins beside a dead run's member and owner nodes, owns nothing for 8 s (no silent
    success meanwhile), then reads every row once they go."""
    outcome = trouble.available_now(spark, cluster3, tmp_path, hold=8)
    passed(outcome)
    assert outcome.said == "succeeded" and any("waited" in n for n in outcome.notes), outcome.notes
