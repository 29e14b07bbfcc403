"""The executor read (kafka_read.read_task) of this checkout against another's, alternated on one local cluster.

    .venv/bin/python scripts/bench/read_task_tail.py --against /other/checkout/zkconsumer/spark/kafka_read.py --rounds 5

Two reads per round and version: a range whose tail is two transaction commit markers (100 messages in
two committed transactions, offsets [0, 102)), and a bulk read of 400,000 100-byte messages over 4
partitions (batchSize 20,000). Prints each read, then the medians per read and version.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.spark.offsets import OffsetRange  # noqa: E402
from zkconsumer.spark.options import READER_FORCED  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.pytest_plugin import running  # noqa: E402
from zkconsumer.testing.versions import versions_from_env  # noqa: E402


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transactional_tail(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(30)
    for _ in range(2):
        producer.begin_transaction()
        for _ in range(50):
            producer.produce(topic, value=b"x" * 100, partition=0)
        producer.commit_transaction(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, required=True, help="another checkout's zkconsumer/spark/kafka_read.py")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    versions = {
        "this": load(ROOT / "zkconsumer" / "spark" / "kafka_read.py", "kr_this"),
        "other": load(args.against, "kr_other"),
    }
    local = LocalCluster(brokers=1, chroot="/readtail", workdir=Path(tempfile.mkdtemp()) / "c", **versions_from_env())
    with running(local, "the read_task bench cluster", timeout=120):
        local.create_topic("tail", 1)
        transactional_tail(local.bootstrap_servers, "tail")
        ((_, high),) = kafka.end_offsets(local.bootstrap_servers, "tail").values()
        local.create_topic("bulk", 4)
        kafka.produce_numbered(local.bootstrap_servers, "bulk", 400_000, partitions=4, value_size=100)
        ends = kafka.end_offsets(local.bootstrap_servers, "bulk")
        reads = {
            "tail": [OffsetRange("tail", 0, 0, high, local.bootstrap_servers)],
            "bulk": [OffsetRange("bulk", p, 0, hi, local.bootstrap_servers) for p, (_, hi) in sorted(ends.items())],
        }
        conf = {**READER_FORCED, "group.id": "read-task-bench"}
        seconds: dict[tuple[str, str], list[float]] = {}
        for rnd in range(args.rounds):
            for version, module in versions.items():
                for what, ranges in reads.items():
                    began, rows = time.perf_counter(), 0
                    for batch in module.read_task(
                        ranges, conf, batch_size=20000, fail_on_data_loss=True, poll_timeout_s=30.0
                    ):
                        rows += batch.num_rows
                    took = time.perf_counter() - began
                    seconds.setdefault((what, version), []).append(took)
                    print(f"round {rnd} {version} {what}: {rows} rows in {took:.3f} s", flush=True)
        for (what, version), values in sorted(seconds.items()):
            print(f"median {what} {version}: {statistics.median(values):.3f} s")


if __name__ == "__main__":
    main()
