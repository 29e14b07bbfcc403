"""ZKCONSUMER_CLUSTER=docker: the compose.yaml cluster started through testcontainers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from zkconsumer.testing.jars import repo_root
from zkconsumer.testing.probes import ExternalCluster


@contextmanager
def docker_cluster() -> Iterator[ExternalCluster]:
    """Run compose.yaml for the duration of the block (needs a Docker engine; ours have none).

    Process-level fault control (kill a broker, restart ZooKeeper) is only offered by the
    jar cluster, so fault tests require ZKCONSUMER_CLUSTER=local.
    """
    from testcontainers.compose import DockerCompose

    root = repo_root()
    if root is None:
        raise RuntimeError("ZKCONSUMER_CLUSTER=docker needs a source checkout with compose.yaml")
    compose = DockerCompose(str(root), compose_file_name="compose.yaml", wait=True)
    with compose:
        yield ExternalCluster("localhost:2181/kafka", "localhost:9092")
