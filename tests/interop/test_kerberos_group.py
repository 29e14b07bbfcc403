"""Groups on a Kerberos-secured ZooKeeper (a real MIT KDC): zkconsumer logs in with GSSAPI from the
JAAS file a JVM member uses (Krb5LoginModule, keytab), shares the group with a Kerberos Scala 1.1.1
member both ways, and a principal the keytab does not hold is one clear error naming it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from secured_checks import acls, owners_of, wait_committed

from harness.kdc import Kdc, KerberosLogin
from harness.members import keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.testing.pytest_plugin import running
from zkconsumer.testing.versions import versions_from_env
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.auth import CLIENT_KEYTAB_ENV

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(240)]

PARTITIONS = 4
BATCH = 20
COMMIT_SOON = {"auto.commit.interval.ms": 1000}


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kdc]:
    """A KDC for realm ZKC.TEST; this process's Kerberos library reads its krb5.conf while it runs."""
    saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", CLIENT_KEYTAB_ENV, "KRB5CCNAME")}
    folder = tmp_path_factory.mktemp("kdc")
    try:
        server = Kdc(folder).start()
    except ClusterStartError as exc:
        pytest.fail(f"the KDC did not start:\n{exc}", pytrace=False)
    # A ticket cache of our own, so that nothing from the machine's default cache is used.
    os.environ.update({**server.client_env(), "KRB5CCNAME": f"FILE:{folder / 'ccache'}"})
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


@pytest.fixture(scope="module")
def alice(kdc: Kdc) -> KerberosLogin:
    return kdc.login("alice")


@pytest.fixture(scope="module")
def cluster(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """ZooKeeper taking GSSAPI logins as zookeeper/localhost (brokers unauthenticated); fails, never skips."""
    folder = tmp_path_factory.mktemp("zkkrb")
    cluster = LocalCluster(
        brokers=1, chroot="/zkkrb", workdir=folder / "cluster", zookeeper_kerberos=kdc, **versions_from_env()
    )
    with running(cluster, "the Kerberos ZooKeeper cluster", timeout=90):
        yield cluster


def jaas_file(login: KerberosLogin, folder: Path) -> dict[str, str]:
    path = folder / f"{login.principal.split('@')[0]}.jaas"
    path.write_text(login.client_jaas())
    return {"java.security.auth.login.config": str(path)}


def test_kerberos_mixed_group_hands_over_both_ways(mixed, zk, alice, topic_factory, produce, tmp_path) -> None:
    """Ours (a-py) and a Kerberos Scala member (b-scala) share the group as alice@ZKC.TEST; our owner
    and offset nodes carry the Scala member's ACL. a-py leaves: Scala takes everything where we
    committed; c-py joins and Scala leaves: ours takes everything where Scala committed."""
    topic = topic_factory(partitions=PARTITIONS)
    g = mixed.group
    creds = jaas_file(alice, tmp_path)
    mixed.add_py("a-py", {topic: 1}, **creds, **COMMIT_SOON)
    mixed.add_scala("b-scala", {topic: 1}, zookeeper_kerberos=alice, **COMMIT_SOON)
    mixed.wait_ready()
    owners = mixed.balanced([topic])
    assert owners_of(owners, g, "a-py") == {0, 1} and owners_of(owners, g, "b-scala") == {2, 3}, owners
    secured = frozenset({("sasl", alice.principal, 31), ("world", "anyone", 1)})
    for p in range(PARTITIONS):  # ours (0, 1) exactly as the Scala member's (2, 3)
        assert acls(zk, znodes.owner_path(g, topic, p)) == secured, p
    batch1 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS)
    mixed.wait_for(keys_of(batch1))
    wait_committed(zk, g, topic, BATCH)
    for p in range(PARTITIONS):
        assert acls(zk, znodes.offset_path(g, topic, p)) == secured, p

    mixed.leave("a-py")
    assert owners_of(mixed.balanced([topic]), g, "b-scala") == set(range(PARTITIONS))
    batch2 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS, start=BATCH * PARTITIONS)
    mixed.wait_for(keys_of(batch2))
    wait_committed(zk, g, topic, 2 * BATCH)

    mixed.add_py("c-py", {topic: 1}, **creds, **COMMIT_SOON)
    mixed.balanced([topic])
    mixed.leave("b-scala")
    assert owners_of(mixed.balanced([topic]), g, "c-py") == set(range(PARTITIONS))
    batch3 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS, start=2 * BATCH * PARTITIONS)
    mixed.wait_for(keys_of(batch3))
    mixed.leave("c-py")
    wait_committed(zk, g, topic, 3 * BATCH, timeout=5)
    counts = mixed.keys()
    assert set(counts) == keys_of(batch1) | keys_of(batch2) | keys_of(batch3), "loss"
    assert not {k: n for k, n in counts.items() if n > 1}, "re-delivery after a clean, committed hand-over"


def test_a_principal_the_keytab_does_not_hold_is_one_clear_error(kdc, alice, cluster, group_id, tmp_path) -> None:
    """JAAS naming mallory with alice's keytab: the constructor fails at once, naming mallory."""
    kdc.add_principal("mallory")  # exists in the realm, but not in alice's keytab
    jaas = tmp_path / "mallory.jaas"
    jaas.write_text(alice.client_jaas().replace(alice.principal, kdc.principal("mallory")))
    began = time.monotonic()
    with pytest.raises(ZkConsumerError) as failure:
        ConsumerConnector(
            {
                "zookeeper.connect": cluster.zookeeper_connect,
                "group.id": group_id,
                "java.security.auth.login.config": str(jaas),
                "zookeeper.connection.timeout.ms": 10000,
            }
        )
    assert "mallory@ZKC.TEST" in str(failure.value), failure.value
    assert time.monotonic() - began < 15


def test_the_cli_logs_in_from_the_keytab_of_its_jaas_file(alice, cluster, zk, group_id, tmp_path, monkeypatch) -> None:
    """`zkconsumer --zk-jaas` with Krb5LoginModule useKeyTab: no ticket cache, no KRB5_CLIENT_KTNAME
    beforehand; the CLI writes a first offset into the group, as alice."""
    from click.testing import CliRunner

    from zkconsumer.cli.main import cli

    monkeypatch.setenv(CLIENT_KEYTAB_ENV, "placeholder")
    monkeypatch.delenv(CLIENT_KEYTAB_ENV)  # the undo then removes what the CLI sets
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty-ccache'}")
    jaas = tmp_path / "cli.jaas"
    jaas.write_text(alice.client_jaas())
    topic = f"kerberos-cli-{group_id[-12:]}"
    cluster.create_topic(topic, partitions=1)
    zk.ensure_path(znodes.ids_path(group_id))  # a group that exists, with nothing committed yet
    result = CliRunner().invoke(
        cli,
        [
            "offsets",
            "reset",
            "--group",
            group_id,
            "--topic",
            topic,
            "--to-offset",
            "0",
            "--execute",
            "--zookeeper-only",
        ],
        catch_exceptions=False,
        env={"ZKCONSUMER_ZOOKEEPER": cluster.zookeeper_connect, "ZKCONSUMER_ZK_JAAS": str(jaas)},
    )
    assert result.exit_code == 0, result.output
    assert acls(zk, znodes.offset_path(group_id, topic, 0)) == {("sasl", alice.principal, 31), ("world", "anyone", 1)}
