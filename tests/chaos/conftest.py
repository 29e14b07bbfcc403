"""Chaos fixtures: `chaos_env(topics, ...)` builds a ChaosEnv on the session cluster and tears it down."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from harness.chaos_scenarios import ChaosEnv, ChaosSettings
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.netlab import LabError, NetLab

_topics = itertools.count()


@pytest.fixture
def chaos_env(cluster, group_id, tmp_path) -> Iterator[Callable[..., ChaosEnv]]:  # type: ignore[no-untyped-def]
    """make(partitions=8, *, topics=None, settings=None, on=None, replication=1) -> a started ChaosEnv."""
    made: list[ChaosEnv] = []

    def make(
        partitions: int = 8,
        *,
        topics: dict[str, int] | None = None,
        settings: ChaosSettings | None = None,
        on=None,
        replication: int = 1,
    ) -> ChaosEnv:  # type: ignore[no-untyped-def]
        target = on or cluster
        if not isinstance(target, LocalCluster):
            pytest.fail("chaos scenarios need the local jar cluster (ZKCONSUMER_CLUSTER=local)")
        names = topics or {f"chaos-{group_id[-40:]}-{next(_topics)}": partitions}
        env = ChaosEnv(target, group_id, names, tmp_path / "chaos", settings, replication=replication)
        made.append(env)
        return env.start()

    yield make
    for env in made:
        env.close()


@pytest.fixture(scope="module")
def lab() -> Iterator[NetLab]:
    """A network lab of namespaces for one test module (zkconsumer.testing.netlab); fails, never skips, without root."""
    made = NetLab()
    try:
        made.create()
    except LabError as exc:
        pytest.fail(f"the network lab could not be made (root, ip and nft are needed):\n{exc}", pytrace=False)
    try:
        yield made
    finally:
        made.close()
