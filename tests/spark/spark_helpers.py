"""Helpers of the Spark tests: environment for Python workers, CLI describe, query progress, sink contents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ZKCONSUMER = str(Path(sys.executable).with_name("zkconsumer"))
# Consumer settings that make group changes quick in tests (the defaults are production-sized).
FAST = {"zookeeper.session.timeout.ms": "6000", "rebalance.backoff.ms": "500", "rebalance.max.retries": "20"}


def spark_environment() -> None:
    """Python workers must run this interpreter (pyarrow, confluent-kafka) and import zkconsumer.spark."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def describe(cluster, group: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """`zkconsumer groups describe --json`, run as the installed CLI."""
    done = subprocess.run(
        [ZKCONSUMER, "groups", "describe", "--zookeeper", cluster.zookeeper_connect, "--group", group, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def source_end(query: Any) -> dict[tuple[str, int], int] | None:
    """The last micro-batch's end offsets of the (single) source, None before the first batch."""
    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return None
    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    if not end:
        return None
    out = {}
    for key, value in end.items():
        if not key.startswith("@"):
            topic, _, partition = key.rpartition("/")
            out[(topic, int(partition))] = value
    return out


def wait_until(condition: Callable[[], object], timeout: float, what: str, query: Any = None) -> Any:
    """Poll `condition` until truthy; fail with `what` (and the query's error, if it died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.25)


def sink_rows(spark, path: str) -> list[tuple[str, int, int, bytes]]:  # type: ignore[no-untyped-def]
    """(topic, partition, offset, value) of every row a parquet sink (or ingest output) holds."""
    if not any(Path(path).rglob("*.parquet")):
        return []
    rows = spark.read.parquet(path).select("topic", "partition", "offset", "value").collect()
    return [(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows]
