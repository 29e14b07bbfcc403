"""The pytest plugin of zkconsumer.testing: fixtures `cluster`, `zk`, `topic_factory`, `produce`, `group_id`.

Opt-in: installing zkconsumer registers no pytest plugin (no ``pytest11`` entry point), so other
projects' test runs get none of these names. Enable it with ``pytest -p zkconsumer.testing.pytest_plugin``
or ``pytest_plugins = ["zkconsumer.testing.pytest_plugin"]`` in a conftest.py (``pip install
'zkconsumer[testing]'`` brings pytest). The cluster comes from ZKCONSUMER_CLUSTER:
``local`` (default: ZooKeeper + one broker from jars), ``docker`` (compose.yaml through
testcontainers) or ``external`` (ZKCONSUMER_ZOOKEEPER and ZKCONSUMER_BOOTSTRAP name a running
cluster). A local cluster runs the Kafka release ZKCONSUMER_KAFKA_VERSION (default 3.9.1) on the
ZooKeeper ZKCONSUMER_ZOOKEEPER_VERSION (default: the one the release bundles); see
zkconsumer.testing.versions. A cluster that cannot start FAILS the tests that need it, with the JVM
log tail: it never skips them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Callable, Iterator

import pytest

from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.jars import JarsMissingError
from zkconsumer.testing.probes import ClusterStartError, ExternalCluster
from zkconsumer.testing.versions import versions_from_env


@contextlib.contextmanager
def running(cluster: LocalCluster, what: str, timeout: float = 120.0) -> Iterator[LocalCluster]:
    """Start `cluster` for a fixture, failing the test (never skipping it) with the JVM log tail
    when it cannot start; stop it afterwards."""
    try:
        cluster.start(timeout=timeout)
    except (ClusterStartError, JarsMissingError) as exc:
        pytest.fail(f"{what} did not start:\n{exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def start_cluster_for_tests(mode: str | None = None) -> Iterator[LocalCluster | ExternalCluster]:
    """Yield the cluster named by ZKCONSUMER_CLUSTER; fail loudly if it cannot start."""
    mode = (mode or os.environ.get("ZKCONSUMER_CLUSTER", "local")).lower()
    if mode == "external":
        yield ExternalCluster(os.environ["ZKCONSUMER_ZOOKEEPER"], os.environ["ZKCONSUMER_BOOTSTRAP"])
    elif mode == "docker":
        from zkconsumer.testing.docker import docker_cluster

        with docker_cluster() as cluster:
            yield cluster
    elif mode == "local":
        versions = versions_from_env()
        local = LocalCluster(brokers=1, chroot="/zkc-tests", **versions)
        with running(
            local,
            f"local Kafka {versions['kafka_version']} / ZooKeeper {versions['zookeeper_version'] or 'bundled'} cluster",
        ) as cluster:
            yield cluster
    else:
        raise pytest.UsageError(f"ZKCONSUMER_CLUSTER={mode!r}: use local, docker or external")


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster | ExternalCluster]:
    yield from start_cluster_for_tests()


@pytest.fixture
def zk(cluster):  # type: ignore[no-untyped-def]
    """A started kazoo client inside the cluster's chroot, closed after the test."""
    client = cluster.zk_client()
    yield client
    client.stop()
    client.close()


_counter = itertools.count()


def _unique(prefix: str, request: pytest.FixtureRequest) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-60:].strip("-")
    return f"{prefix}-{stem}-{os.getpid()}-{next(_counter)}"


@pytest.fixture
def group_id(request: pytest.FixtureRequest) -> str:
    """A consumer group name no other test uses."""
    return _unique("g", request)


@pytest.fixture
def topic_factory(cluster, request: pytest.FixtureRequest) -> Callable[..., str]:  # type: ignore[no-untyped-def]
    """make_topic(partitions=1, replication_factor=None, name=None) -> a new, led topic's name
    (None: the cluster's default replication, 1 unless it runs a ZooKeeper ensemble)."""

    def make_topic(partitions: int = 1, replication_factor: int | None = None, name: str | None = None) -> str:
        topic = name or _unique("t", request)
        cluster.create_topic(topic, partitions, replication_factor)
        return topic

    return make_topic


@pytest.fixture
def produce(cluster) -> Callable[..., list[kafka.Produced]]:  # type: ignore[no-untyped-def]
    """produce(topic, count, partitions=None, start=0, value_size=None) -> acknowledged messages."""

    release = getattr(cluster, "kafka", None)  # a LocalCluster's KafkaRelease; others run a current broker
    idempotent = release is None or release.idempotent_producer

    def _produce(topic: str, count: int, **kwargs: object) -> list[kafka.Produced]:
        kwargs.setdefault("idempotent", idempotent)
        return kafka.produce_numbered(cluster.bootstrap_servers, topic, count, **kwargs)  # type: ignore[arg-type]

    return _produce
