"""Broker and topic znodes as every supported Kafka release writes them, read through zkconsumer's decoders.

The goldens in tests/unit/golden/kafka-<version>/ (broker.json = /brokers/ids/0, topic.json =
/brokers/topics/<t>, partition-state.json = its partition 0 state) were captured from real brokers
with host, ports, timestamps and topic ids normalized (tests/harness/golden.py). Recapture
them, all or some, with one cluster at a time:

    ZKCONSUMER_JARS=.jars PYTHONPATH=tests python -m harness.golden [3.9.1 2.8.2 ...]

tests/cluster/test_versions.py compares a live capture of each release with its golden, so a
format drift fails there, and these tests say what zkconsumer makes of each format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import golden
from harness.zkmodel import ZkModel
from zkconsumer.cluster import broker_nodes
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.testing.jars import KNOWN
from zkconsumer.testing.versions import (
    KAFKA,
    KafkaRelease,
    ZooKeeperRelease,
    jar_sets,
    kafka_release,
    zookeeper_release,
)
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO

GOLDEN = Path(__file__).parent / "golden"
RELEASES = [pytest.param(release, id=version) for version, release in KAFKA.items()]
ROOT = Path(__file__).parents[2]


def goldens(release: KafkaRelease) -> dict[str, bytes]:
    nodes = golden.load(release.version, GOLDEN)
    assert sorted(nodes) == sorted(golden.FILES), f"goldens missing in {golden.release_dir(release.version, GOLDEN)}"
    return nodes


@pytest.mark.parametrize("release", RELEASES)
def test_broker_registration_decodes(release: KafkaRelease) -> None:
    path = znodes.broker_path(0)
    info = broker_nodes.decode_broker(0, goldens(release)["broker.json"], path)
    assert info.version == release.broker_registration
    # v1 (0.8.2) is host and port only; v2 (0.9) adds endpoints; the protocol map comes with v4 (0.10.2)
    assert info.endpoints == (() if info.version == 1 else ("PLAINTEXT://broker-0:9092",))
    assert info.end_points() == (broker_nodes.EndPoint("PLAINTEXT", "broker-0", 9092, "PLAINTEXT"),)
    assert info.plaintext_address() == ("broker-0", 9092)
    protocol_map = (("PLAINTEXT", "PLAINTEXT"),) if info.version >= 4 else None
    assert info.listener_security_protocol_map == protocol_map
    assert broker_nodes.client_settings([info]) == release.client_settings()  # what librdkafka must be told
    assert (info.host, info.port, info.rack, info.jmx_port, info.timestamp) == (
        "broker-0",
        9092,
        None,
        -1,
        "1700000000000",
    )


@pytest.mark.parametrize("release", RELEASES)
def test_broker_registration_encodes_back(release: KafkaRelease) -> None:
    """encode_broker (for fixtures) writes the same fields; byte for byte where it knows the key order."""
    data = goldens(release)["broker.json"]
    encoded = broker_nodes.encode_broker(broker_nodes.decode_broker(0, data, znodes.broker_path(0)))
    assert json.loads(encoded) == json.loads(data)
    if release.version != "2.8.2":  # 2.8 writes "features" after "jmx_port"; encode_broker uses 3.9's v5 order
        assert encoded == data


@pytest.mark.parametrize("release", RELEASES)
def test_topic_and_partition_state_decode(release: KafkaRelease) -> None:
    nodes = goldens(release)
    topic_path = znodes.topic_path("golden")
    assert json.loads(nodes["topic.json"])["version"] == release.topic_registration
    assert broker_nodes.decode_topic_partitions(nodes["topic.json"], topic_path) == {0: [0], 1: [0]}
    state_path = znodes.partition_state_path("golden", 0)
    assert broker_nodes.decode_partition_state(nodes["partition-state.json"], state_path) == broker_nodes.LeaderAndIsr(
        leader=0, leader_epoch=0, isr=(0,), controller_epoch=1, version=1
    )


@pytest.mark.parametrize("release", RELEASES)
def test_cluster_metadata_reads_the_goldens(release: KafkaRelease) -> None:
    nodes = goldens(release)
    client = ZkModel().client("broker")
    client.start()
    client.create(znodes.broker_path(0), nodes["broker.json"], makepath=True)
    client.create(znodes.topic_path("golden"), nodes["topic.json"], makepath=True)
    client.create(znodes.partition_state_path("golden", 0), nodes["partition-state.json"], makepath=True)
    meta = ClusterMetadata(ZkIO(client, timeout_s=5.0))
    [broker] = meta.brokers()
    assert (broker.broker_id, broker.plaintext_address()) == (0, ("broker-0", 9092))
    assert meta.partitions(["golden", "absent"]) == {"golden": [0, 1], "absent": []}


def test_differences_catch_a_format_drift() -> None:
    nodes = goldens(KAFKA["2.8.2"])
    assert golden.differences(nodes, nodes) == []
    drifted = dict(
        nodes,
        **{
            "broker.json": nodes["broker.json"].replace(b'"features":{},', b""),
            "topic.json": nodes["topic.json"].replace(b'"version":3', b'"version":4'),
        },
    )
    del drifted["partition-state.json"]
    problems = golden.differences(drifted, nodes)
    assert len(problems) == 3, problems
    assert problems[0].startswith("partition-state.json: present False")
    assert problems[1].startswith("broker.json: structure differs")
    assert problems[2] == "topic.json: version 4 != golden 3"


def test_normalize_keeps_everything_but_run_specific_values() -> None:
    raw = (
        b'{"features":{},"endpoints":["PLAINTEXT://127.0.0.1:41234"],"jmx_port":-1,"port":41234,'
        b'"host":"127.0.0.1","version":5,"timestamp":"1795411616069"}'
    )
    assert golden.normalize(raw) == (
        b'{"features":{},"endpoints":["PLAINTEXT://broker-0:9092"],"jmx_port":-1,'
        b'"port":9092,"host":"broker-0","version":5,"timestamp":"1700000000000"}'
    )
    assert (
        golden.normalize(b'{"topic_id":"6HU9pCDmRGilpa4mhqBaeg","version":3}')
        == b'{"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","version":3}'
    )


def test_every_version_has_a_known_jar_set_with_a_pom() -> None:
    assert set(jar_sets()) <= set(KNOWN)
    for name in jar_sets():
        assert (ROOT / "zkconsumer" / "testing" / "poms" / name / "pom.xml").is_file(), name
    # scripts/fetch-jars.sh fetches only the default sets; the matrix ones come on first use.
    assert "for name in kafka39 kafka11 spark-kafka; do" in (ROOT / "scripts" / "fetch-jars.sh").read_text()


def test_version_lookup() -> None:
    assert zookeeper_release(None, kafka_release("3.9.1")).version == "3.8.4"  # the default cluster
    assert zookeeper_release(None, kafka_release("1.1.1")) == ZooKeeperRelease("3.4.10", None)  # broker's jars
    assert zookeeper_release("3.8", kafka_release("0.10.2.2")).jar_set == "kafka39"
    with pytest.raises(ValueError, match="unsupported kafka_version '0.8.1.1'"):
        kafka_release("0.8.1.1")
    assert kafka_release("0.9.0.1").client_settings() == {
        "api.version.request": "false",
        "broker.version.fallback": "0.9.0.1",
    }
    assert kafka_release("0.10.2.2").client_settings() == {}  # from 0.10 librdkafka asks the broker
    with pytest.raises(ValueError, match="unsupported zookeeper_version '3.6.4'"):
        zookeeper_release("3.6.4", kafka_release("2.8.2"))
