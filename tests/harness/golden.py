"""Golden copies of the broker and topic znodes each Kafka release writes: capture, normalize, compare."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from zkconsumer.testing.versions import KAFKA
from zkconsumer.zookeeper import znodes

TOPIC_PARTITIONS = 2  # the goldens' topic has two partitions, each with the one broker as replica
FILES = ("broker.json", "topic.json", "partition-state.json")

# Only what changes from run to run is rewritten; key order, spacing and every other value stay as written.
_NORMALIZE = (
    (re.compile(rb'"timestamp":"\d+"'), b'"timestamp":"1700000000000"'),
    (re.compile(rb'"host":"[^"]*"'), b'"host":"broker-0"'),
    (re.compile(rb'"port":\d+'), b'"port":9092'),
    (re.compile(rb'://[^":/]*:\d+"'), b'://broker-0:9092"'),
    (re.compile(rb'"topic_id":"[A-Za-z0-9_-]+"'), b'"topic_id":"AAAAAAAAAAAAAAAAAAAAAA"'),
)


def golden_dir() -> Path:
    """tests/unit/golden, beside this harness."""
    return Path(__file__).resolve().parents[1] / "unit" / "golden"


def release_dir(kafka_version: str, folder: Path | None = None) -> Path:
    return (folder or golden_dir()) / f"kafka-{kafka_version}"


def normalize(data: bytes) -> bytes:
    for pattern, replacement in _NORMALIZE:
        data = pattern.sub(replacement, data)
    return data


def capture(client: Any, topic: str, broker_id: int = 0) -> dict[str, bytes]:
    """FILES -> normalized bytes of broker `broker_id`'s registration, `topic`'s node and its partition 0 state.

    `client` is a started kazoo client inside the cluster's chroot; a missing state node is left out.
    """
    paths = {
        "broker.json": znodes.broker_path(broker_id),
        "topic.json": znodes.topic_path(topic),
        "partition-state.json": znodes.partition_state_path(topic, 0),
    }
    out = {}
    for name, path in paths.items():
        if client.exists(path) is not None:
            out[name] = normalize(client.get(path)[0])
    return out


def load(kafka_version: str, folder: Path | None = None) -> dict[str, bytes]:
    """FILES -> the golden bytes (without the file's final newline) of one release."""
    where = release_dir(kafka_version, folder)
    return {name: (where / name).read_bytes().removesuffix(b"\n") for name in FILES if (where / name).is_file()}


class _Object(tuple):  # a JSON object as its (key, value) pairs, in written order
    pass


def shape(data: bytes) -> Any:
    """The structure of a JSON document: keys in their written order, value types, array lengths."""

    def walk(value: Any) -> Any:
        if isinstance(value, _Object):
            return ("object", tuple((key, walk(item)) for key, item in value))
        if isinstance(value, list):
            return ("array", tuple(map(walk, value)))
        return type(value).__name__

    return walk(json.loads(data, object_pairs_hook=_Object))


def differences(live: dict[str, bytes], golden: dict[str, bytes]) -> list[str]:
    """Why `live` does not have the golden's format (files, structure, "version" fields); [] if it does."""
    problems = [
        f"{name}: present {name in live}, golden {name in golden}"
        for name in FILES
        if (name in live) != (name in golden)
    ]
    for name in sorted(set(live) & set(golden)):
        got, want = json.loads(live[name]), json.loads(golden[name])
        if got.get("version") != want.get("version"):
            problems.append(f"{name}: version {got.get('version')} != golden {want.get('version')}")
        if shape(live[name]) != shape(golden[name]):
            problems.append(
                f"{name}: structure differs\n  live:   {live[name].decode()}\n  golden: {golden[name].decode()}"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    """(Re)capture the goldens from real brokers, one release at a time (each with its bundled ZooKeeper)."""
    from zkconsumer.testing.cluster import LocalCluster

    parser = argparse.ArgumentParser(prog="python -m harness.golden", description=main.__doc__)
    parser.add_argument("versions", nargs="*", default=list(KAFKA), help="Kafka versions (default: all)")
    args = parser.parse_args(argv)
    for version in args.versions:
        with LocalCluster(brokers=1, chroot="/golden", kafka_version=version) as cluster:
            cluster.create_topic("golden", TOPIC_PARTITIONS)  # before 0.10 a topic node written as kafka-topics did
            client = cluster.zk_client()
            try:
                nodes = capture(client, "golden")
            finally:
                client.stop()
                client.close()
        where = release_dir(version)
        where.mkdir(parents=True, exist_ok=True)
        for name, data in nodes.items():
            (where / name).write_bytes(data + b"\n")
            print(f"{where / name}: {data.decode()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
