"""zkconsumer against each ZooKeeper-era broker/ZooKeeper pairing LocalCluster runs (issue #13's matrix).

Per pairing: start a one-broker cluster from that release's jars (fetched on first use), check
the running versions, compare the live broker/topic znodes with tests/unit/golden/kafka-<v>/
(structure, key order and "version" fields: a format drift fails here), then produce and
consume with a ConsumerConnector committing to ZooKeeper. A cluster that cannot start fails.
Recapture goldens with `PYTHONPATH=tests python -m harness.golden` (see tests/unit/test_golden_znodes.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import golden
from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.cluster import broker_nodes
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.jars import JarsMissingError
from zkconsumer.testing.probes import ClusterStartError, zookeeper_version
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

GOLDEN = Path(__file__).parents[1] / "unit" / "golden"
PAIRINGS = [
    ("0.8.2.2", "3.4.14"),
    ("0.9.0.1", "3.4.14"),
    ("0.10.2.2", "3.4.14"),
    ("0.11.0.3", "3.4.14"),
    ("1.1.1", "3.4.14"),
    ("1.1.1", "3.5.10"),
    ("2.4.1", "3.5.10"),
    ("2.8.2", "3.5.10"),
    ("3.9.1", None),
]
MESSAGES = 40


@pytest.mark.parametrize(
    ("kafka_version", "zk_version"), PAIRINGS, ids=[f"kafka{k}-zk{z or 'bundled'}" for k, z in PAIRINGS]
)
def test_pairing_formats_and_consumption(kafka_version: str, zk_version: str | None, tmp_path: Path) -> None:
    cluster = LocalCluster(
        brokers=1, chroot="/versions", workdir=tmp_path, kafka_version=kafka_version, zookeeper_version=zk_version
    )
    try:
        cluster.start(timeout=90)
    except (ClusterStartError, JarsMissingError) as exc:
        pytest.fail(f"Kafka {kafka_version} / ZooKeeper {zk_version or 'bundled'} did not start:\n{exc}", pytrace=False)
    print(f"Kafka {kafka_version} / ZooKeeper {cluster.zookeeper_release.version}: up in {cluster.start_seconds:.1f}s")
    try:
        assert zookeeper_version(cluster.zookeeper.port) == cluster.zookeeper_release.version
        broker_log = cluster.brokers[0].process.log_path.read_text(errors="replace")
        if kafka_version != "0.8.2.2":  # 0.8.2 logs no version; its v1 registration (checked below) is 0.8's alone
            assert re.search(rf"Kafka version\s*:\s*{re.escape(kafka_version)}\b", broker_log), cluster.log_tails()

        topic = "matrix"
        cluster.create_topic(topic, partitions=golden.TOPIC_PARTITIONS)
        sent = kafka.produce_numbered(
            cluster.bootstrap_servers,
            topic,
            MESSAGES,
            partitions=golden.TOPIC_PARTITIONS,
            idempotent=cluster.kafka.idempotent_producer,
        )
        zk = cluster.zk_client()
        try:
            live = golden.capture(zk, topic)
            assert golden.differences(live, golden.load(kafka_version, GOLDEN)) == []
            assert (
                broker_nodes.decode_broker(0, zk.get(znodes.broker_path(0))[0], znodes.broker_path(0)).version
                == cluster.kafka.broker_registration
            )

            group = f"matrix-{kafka_version}-{zk_version}".replace(".", "_")
            recorder = Recorder()
            with ConsumerConnector(
                {
                    "zookeeper.connect": cluster.zookeeper_connect,
                    "group.id": group,
                    "consumer.id": "m1",
                    "auto.offset.reset": "smallest",
                    "auto.commit.enable": False,
                    "consumer.timeout.ms": 200,
                    "zookeeper.session.timeout.ms": 6000,
                    "rebalance.backoff.ms": 500,
                }
            ) as conn:
                drain("m1", conn.create_message_streams({topic: 1})[topic], recorder)
                recorder.wait_for(keys_of(sent), timeout=60)
                conn.commit_offsets()
            assert {(d.partition, d.offset, d.value) for d in recorder.deliveries} == {
                (m.partition, m.offset, m.value) for m in sent
            }
            per_partition = MESSAGES // golden.TOPIC_PARTITIONS
            for p in range(golden.TOPIC_PARTITIONS):
                assert zk.get(znodes.offset_path(group, topic, p))[0] == str(per_partition).encode()
        finally:
            zk.stop()
            zk.close()
    except BaseException:
        cluster.stop(keep_logs=True)
        raise
    cluster.stop()
