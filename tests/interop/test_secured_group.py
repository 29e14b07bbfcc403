"""Groups on a SASL-secured ZooKeeper (issue #13): secured Scala 1.1.1 and zkconsumer members share a
group both ways, our nodes carry a secured Scala member's ACLs, and a wrong password or a missing
ACL is one clear error (naming the identity or the znode), never a retry storm or an ownership conflict.

A secured Scala 1.1.1 member (JAAS `Client` section, DIGEST-MD5) creates owners/ and offsets/ nodes
with `sasl:<user>` ALL + `world:anyone` READ and leaves the group node, ids/ and its member node
open (world ALL); that is what these tests hold our members to.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from secured_checks import acls, owners_of, wait_committed

from harness.members import committed_offsets, keys_of
from harness.scala import FAST_PROPERTIES, ScalaMember
from zkconsumer import ConsumerConnector
from zkconsumer.errors import ZkConsumerError
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.pytest_plugin import running
from zkconsumer.testing.secure import DIGEST_LOGIN_MODULE, client_jaas
from zkconsumer.testing.versions import versions_from_env
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(180)]

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
ALICE = ("alice", "alice-secret")
PARTITIONS = 4
BATCH = 20  # messages per partition and batch
COMMIT_SOON = {"auto.commit.interval.ms": 1000}  # both kinds commit within a second
SECURED = frozenset({("sasl", "alice", 31), ("world", "anyone", 1)})  # creator ALL + world READ
OPEN = frozenset({("world", "anyone", 31)})
PY_PROPERTIES = {**FAST_PROPERTIES, "consumer.timeout.ms": 200}  # as conftest's MixedGroup members
SASL_FAILURE = "failed to SASL authenticate"  # the ZooKeeper server's WARN line, once per attempt


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """ZooKeeper with SASL DIGEST-MD5 users alice and bob (brokers unauthenticated); fails, never skips."""
    folder = tmp_path_factory.mktemp("zksasl")
    cluster = LocalCluster(
        brokers=1, chroot="/zksasl", workdir=folder / "cluster", zookeeper_sasl_users=USERS, **versions_from_env()
    )
    with running(cluster, "the SASL ZooKeeper cluster", timeout=90):
        yield cluster


def credentials(style: str, folder: Path, user: str = "alice", password: str = "alice-secret") -> dict[str, str]:
    """zkconsumer properties logging in as user: inline JAAS text, a JAAS file's `Client` section, or a
    section of another name picked with zookeeper.sasl.clientconfig."""
    if style == "inline":
        return {
            "zookeeper.sasl.jaas.config": f'{DIGEST_LOGIN_MODULE} required username="{user}" password="{password}";'
        }
    section = {"file": "Client", "section": "ZkClientX"}[style]
    path = folder / f"{style}-{user}.jaas"
    path.write_text(client_jaas(user, password, section))
    props = {"java.security.auth.login.config": str(path)}
    if section != "Client":
        props["zookeeper.sasl.clientconfig"] = section
    return props


def wording(message: str, *names: str) -> str:
    """The message with the (test-named) group, topic and consumer ids blanked, so that only the
    error's own words can match "NoAuth" or "authentication failed"."""
    for name in sorted(names, key=len, reverse=True):
        message = message.replace(name, "<name>")
    return message


class OffsetWatch:
    """Samples the group's committed offsets every 50 ms (own session) to catch any regression."""

    def __init__(self, cluster: LocalCluster, group: str, topic: str) -> None:
        self.zk = cluster.zk_client()
        self.group, self.topic = group, topic
        self.seen: dict[int, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="offset-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with suppress(Exception):  # a node being created under us: look again
                for p, offset in committed_offsets(self.zk, self.group, self.topic).items():
                    if not self.seen.get(p) or self.seen[p][-1] != offset:
                        self.seen.setdefault(p, []).append(offset)

    def regressions(self) -> dict[int, list[int]]:
        return {p: seq for p, seq in self.seen.items() if seq != sorted(seq)}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.zk.stop()
        self.zk.close()


# ------------------------------------------------------------------------------------- (a)


@pytest.mark.parametrize("first", ["scala", "zkconsumer"])
def test_secured_mixed_group_hands_over_both_ways(
    mixed, zk, cluster, topic_factory, produce, tmp_path: Path, first: str
) -> None:
    """Kind A (`first`) joins, then kind B, both logged in as alice; each consumes its range and
    commits. A leaves: B takes A's partitions at the committed offset. A new A member joins and B
    leaves: the new A takes everything at the committed offset. No loss, no re-delivery, committed
    offsets never go back. Our member logs in with inline JAAS text (Scala first) or a JAAS file's
    Client section (ours first)."""
    topic = topic_factory(partitions=PARTITIONS)
    g = mixed.group
    creds = credentials("inline" if first == "scala" else "file", tmp_path)

    def add(name: str) -> None:
        if name.endswith("scala"):
            mixed.add_scala(name, {topic: 1}, zookeeper_sasl=ALICE, **COMMIT_SOON)
            mixed.wait_ready()
        else:
            mixed.add_py(name, {topic: 1}, **creds, **COMMIT_SOON)

    kinds = {"scala": "scala", "zkconsumer": "py"}
    second = "zkconsumer" if first == "scala" else "scala"
    a, b, c = f"a-{kinds[first]}", f"b-{kinds[second]}", f"c-{kinds[first]}"
    watch = OffsetWatch(cluster, g, topic)
    try:
        add(a)
        add(b)
        owners = mixed.balanced([topic])
        assert owners_of(owners, g, a) == {0, 1} and owners_of(owners, g, b) == {2, 3}, owners
        batch1 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS)
        mixed.wait_for(keys_of(batch1))
        for name, mine in ((a, {0, 1}), (b, {2, 3})):  # each consumed its own share, all of it
            assert sorted(mixed.deliveries(name)) == [(topic, p, o) for p in sorted(mine) for o in range(BATCH)], name
        wait_committed(zk, g, topic, BATCH)  # both kinds commit through their SASL sessions

        # A leaves: B takes 0 and 1 where A committed.
        mixed.leave(a)
        owners = mixed.balanced([topic])
        assert owners_of(owners, g, b) == set(range(PARTITIONS)), owners
        batch2 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS, start=BATCH * PARTITIONS)
        mixed.wait_for(keys_of(batch2))
        for p in (0, 1):
            assert [o for _, q, o in mixed.deliveries(b) if q == p] == list(range(BATCH, 2 * BATCH)), (b, p)
        wait_committed(zk, g, topic, 2 * BATCH)

        # A new A member joins (takes 2 and 3 from B), then B leaves: A takes 0 and 1 too.
        add(c)
        owners = mixed.balanced([topic])
        assert owners_of(owners, g, b) == {0, 1} and owners_of(owners, g, c) == {2, 3}, owners
        mixed.leave(b)
        owners = mixed.balanced([topic])
        assert owners_of(owners, g, c) == set(range(PARTITIONS)), owners
        batch3 = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS, start=2 * BATCH * PARTITIONS)
        mixed.wait_for(keys_of(batch3))
        assert sorted(mixed.deliveries(c)) == [
            (topic, p, o) for p in range(PARTITIONS) for o in range(2 * BATCH, 3 * BATCH)
        ]
        mixed.leave(c)
        wait_committed(zk, g, topic, 3 * BATCH, timeout=5)  # the last leave committed everything
    finally:
        watch.close()
    counts = mixed.keys()
    assert set(counts) == keys_of(batch1) | keys_of(batch2) | keys_of(batch3), "loss"
    assert not {k: n for k, n in counts.items() if n > 1}, "re-delivery after a clean, committed hand-over"
    assert not watch.regressions(), f"committed offsets went back: {watch.regressions()}"
    assert set(watch.seen) == set(range(PARTITIONS))


# ------------------------------------------------------------------------------------- (b)


def node_paths(group: str, topic: str, member: str, partition: int) -> dict[str, str]:
    """The nodes a member creates, by kind, in the group (member: a consumer id)."""
    return {
        "group": znodes.group_path(group),
        "ids": znodes.ids_path(group),
        "member": znodes.member_path(group, member),
        "owners": znodes.owners_path(group),
        "owners/topic": znodes.owners_path(group, topic),
        "owner": znodes.owner_path(group, topic, partition),
        "offsets": znodes.offsets_path(group),
        "offsets/topic": znodes.offsets_path(group, topic),
        "offset": znodes.offset_path(group, topic, partition),
    }


def test_our_nodes_carry_the_acls_of_a_secured_scala_member(
    mixed, zk, cluster, topic_factory, produce, capsys, tmp_path: Path
) -> None:
    """Group `ref`: a secured Scala member alone (the reference). Group g: our member (JAAS file,
    section picked by zookeeper.sasl.clientconfig) joins first, so it creates the group's folders;
    a secured Scala member joins; both consume and commit their halves. Every node our member
    created carries exactly the ACLs of the same node in `ref`; owner and member nodes match the
    Scala member's own in g."""
    topic = topic_factory(partitions=PARTITIONS)
    g = mixed.group
    ref = f"{g}-ref"
    mixed.add_py("a-py", {topic: 1}, **credentials("section", tmp_path), **COMMIT_SOON)
    mixed.add_scala("b-scala", {topic: 1}, zookeeper_sasl=ALICE, **COMMIT_SOON)
    reference = ScalaMember(
        cluster.zookeeper_connect,
        ref,
        "ref-scala",
        workdir=tmp_path,
        topics={topic: 1},
        properties=COMMIT_SOON,
        zookeeper_sasl=ALICE,
    ).start()  # not a member of g
    try:
        mixed.wait_ready()
        reference.wait_ready()
        owners = mixed.balanced([topic])
        assert owners_of(owners, g, "a-py") == {0, 1}, owners
        sent = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS)
        mixed.wait_for(keys_of(sent))
        wait_committed(zk, g, topic, BATCH)
        wait_committed(zk, ref, topic, BATCH)

        scala_ref = {kind: acls(zk, path) for kind, path in node_paths(ref, topic, f"{ref}_ref-scala", 0).items()}
        ours = {kind: acls(zk, path) for kind, path in node_paths(g, topic, f"{g}_a-py", 0).items()}
        scala_in_g = {kind: acls(zk, node_paths(g, topic, f"{g}_b-scala", 2)[kind]) for kind in ("member", "owner")}
        markers = {
            path: sorted(acls(zk, path))
            for path in (znodes.zkconsumer_members_path(g), znodes.zkconsumer_member_path(g, f"{g}_a-py"))
            if zk.exists(path) is not None
        }
    finally:
        reference.process.stop(timeout=10)
    with capsys.disabled():  # zkconsumer's own marker nodes: no Scala counterpart, recorded only
        print(f"\n[zksasl] ACLs of our marker nodes: {markers}")
    # What the probe found a secured Scala 1.1.1 member does (pinned, so a change is noticed).
    assert scala_ref == {
        "group": OPEN,
        "ids": OPEN,
        "member": OPEN,
        "owners": SECURED,
        "owners/topic": SECURED,
        "owner": SECURED,
        "offsets": SECURED,
        "offsets/topic": SECURED,
        "offset": SECURED,
    }
    protected = ("owners", "owners/topic", "owner", "offsets", "offsets/topic", "offset")
    assert {k: ours[k] for k in protected} == {k: scala_ref[k] for k in protected}, "owners/ or offsets/"
    assert scala_in_g["owner"] == ours["owner"]
    assert acls(zk, znodes.offset_path(g, topic, 1)) == acls(zk, znodes.offset_path(g, topic, 3)) == SECURED
    # The open part: a secured Scala member leaves the group node, ids/ and its member node world-writable.
    assert {k: ours[k] for k in ("group", "ids", "member")} == {k: scala_ref[k] for k in ("group", "ids", "member")}
    assert scala_in_g["member"] == ours["member"]


# ------------------------------------------------------------------------------------- (c)


def sasl_failures(cluster: LocalCluster) -> int:
    return cluster.zookeeper.process.log_path.read_text(errors="replace").count(SASL_FAILURE)


def test_wrong_password_fails_once_naming_the_identity(
    cluster, zk, group_id: str, topic_factory, tmp_path: Path
) -> None:
    """alice with bob's password: the connector does not start, says authentication failed for
    alice, within the connection timeout, after at most a few attempts, and tries nothing after."""
    topic = topic_factory(partitions=1)
    config = {
        **PY_PROPERTIES,
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group_id,
        "consumer.id": "m-wrong",
        **credentials("inline", tmp_path, "alice", "bob-secret"),
    }
    before = sasl_failures(cluster)
    began = time.monotonic()
    conn: ConsumerConnector | None = None
    with pytest.raises(Exception) as info:
        conn = ConsumerConnector(config)
        conn.create_message_streams({topic: 1})
    elapsed = time.monotonic() - began
    if conn is not None:
        with suppress(Exception):
            conn.shutdown(timeout=5)
    message = f"{type(info.value).__name__}: {info.value}"
    assert re.search(r"authentication failed", wording(message, group_id, topic), re.I), message
    assert "alice" in wording(message, group_id, topic), f"the identity is not named: {message}"
    assert "bob-secret" not in message, "the password leaked into the error"
    assert not getattr(info.value, "retriable", False), "a wrong password is not worth retrying"
    assert elapsed < 15, f"took {elapsed:.1f}s to give up"
    assert zk.exists(znodes.member_path(group_id, f"{group_id}_m-wrong")) is None
    time.sleep(0.5)  # the server logs the failure as the connection closes
    attempts = sasl_failures(cluster) - before
    assert 1 <= attempts <= 3, f"{attempts} SASL attempts for one start"
    time.sleep(3)
    assert sasl_failures(cluster) - before == attempts, "still trying to log in after giving up"


# ------------------------------------------------------------------------------------- (d)


def secured_scala_committed_and_left(mixed, zk, produce, topic: str) -> None:  # type: ignore[no-untyped-def]
    """A secured Scala member (alice) consumes BATCH messages per partition, commits them, and leaves."""
    sent = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS)
    mixed.add_scala("a-scala", {topic: 1}, zookeeper_sasl=ALICE, **COMMIT_SOON)
    mixed.wait_ready()
    mixed.wait_for(keys_of(sent))
    wait_committed(zk, mixed.group, topic, BATCH)
    mixed.leave("a-scala")


@pytest.mark.parametrize("step", ["claim", "commit"])
def test_missing_acl_is_reported_as_noauth_on_the_znode(mixed, zk, cluster, topic_factory, produce, step: str) -> None:
    """A secured Scala member consumed and committed, then left; our member, without credentials,
    joins alone. `claim`: owners/<topic> is alice's, so claiming fails. `commit`: owners/<topic>
    was made open beforehand (claims work), the offset nodes are alice's, so committing fails.
    Either way: an error naming the znode and NoAuth, never an ownership conflict."""
    topic = topic_factory(partitions=PARTITIONS)
    g = mixed.group
    if step == "commit":
        zk.ensure_path(znodes.owners_path(g, topic))  # open (world ALL): made before the Scala member
    secured_scala_committed_and_left(mixed, zk, produce, topic)
    assert acls(zk, znodes.offset_path(g, topic, 0)) == SECURED
    assert acls(zk, znodes.owners_path(g, topic)) == (OPEN if step == "commit" else SECURED)

    began = time.monotonic()
    if step == "claim":
        with pytest.raises(Exception) as info:
            mixed.add_py("b-py", {topic: 1})
        where = znodes.owners_path(g, topic)
    else:
        conn = mixed.add_py("b-py", {topic: 1}, auto_commit_enable="false")
        assert owners_of(mixed.balanced([topic]), g, "b-py") == set(range(PARTITIONS))
        more = produce(topic, BATCH * PARTITIONS, partitions=PARTITIONS, start=BATCH * PARTITIONS)
        mixed.wait_for(keys_of(more))
        began = time.monotonic()
        with pytest.raises(Exception) as info:
            conn.commit_offsets()
        where = znodes.offsets_path(g, topic) + "/"
        mixed.py.pop("b-py")
        with suppress(ZkConsumerError):  # its last commit fails the same way
            conn.shutdown(timeout=10)
        assert committed_offsets(zk, g, topic) == {p: BATCH for p in range(PARTITIONS)}
    elapsed = time.monotonic() - began
    message = f"{type(info.value).__name__}: {info.value}"
    assert re.search(r"no ?auth", wording(message, g, topic), re.I), message
    assert where in message, f"the znode is not named: {message}"
    assert "still owns" not in message, message
    assert elapsed < 30, f"took {elapsed:.1f}s to report it"


def test_the_cli_writes_a_secured_group_with_zk_jaas(
    mixed, zk, cluster, topic_factory, produce, tmp_path: Path
) -> None:
    """`offsets reset` on a group a secured Scala member committed to: refused without credentials
    (saying how to log in), done with --zk-jaas, and the node keeps its secured ACL."""
    from click.testing import CliRunner

    from zkconsumer.cli.main import cli

    topic = topic_factory(partitions=PARTITIONS)
    g = mixed.group
    secured_scala_committed_and_left(mixed, zk, produce, topic)
    jaas = tmp_path / "client.jaas"
    jaas.write_text(client_jaas(*ALICE))
    args = [
        "offsets",
        "reset",
        "--zookeeper",
        cluster.zookeeper_connect,
        "--group",
        g,
        "--topic",
        topic,
        "--to-offset",
        "5",
        "--execute",
    ]
    runner = CliRunner()
    refused = runner.invoke(cli, args)
    assert refused.exit_code != 0 and "NoAuth" in refused.output and "--zk-jaas" in refused.output, refused.output
    assert committed_offsets(zk, g, topic) == {p: BATCH for p in range(PARTITIONS)}
    done = runner.invoke(cli, [*args, "--zk-jaas", str(jaas)])
    assert done.exit_code == 0, done.output
    assert committed_offsets(zk, g, topic) == {p: 5 for p in range(PARTITIONS)}
    assert acls(zk, znodes.offset_path(g, topic, 0)) == SECURED
    wrong = tmp_path / "wrong.jaas"
    wrong.write_text(client_jaas("alice", "not-the-password"))
    rejected = runner.invoke(cli, [*args, "--zk-jaas", str(wrong)])
    assert rejected.exit_code != 0 and "rejected sasl:alice (DIGEST-MD5): authentication failed" in rejected.output, (
        rejected.output
    )


def test_a_cli_write_into_a_new_group_leaves_the_group_node_open(cluster, zk, tmp_path: Path) -> None:
    """The CLI's guarded write with --zk-jaas creates a missing group the way a secured Scala member
    does: the group node open (others must register under it), owners/ and offsets/ secured."""
    from zkconsumer.cli import common
    from zkconsumer.zookeeper.guarded_write import write_offset_guarded

    jaas = tmp_path / "client.jaas"
    jaas.write_text(client_jaas(*ALICE))
    group, topic = "g-cli-fresh-group", "t-cli-fresh-group"
    token = common._JAAS_FILE.set(str(jaas))
    try:
        with common.zk_session(cluster.zookeeper_connect, None, 10.0) as client:
            assert write_offset_guarded(client, group, topic, 0, 7) is None
    finally:
        common._JAAS_FILE.reset(token)
    assert acls(zk, znodes.group_path(group)) == OPEN
    assert acls(zk, znodes.owners_path(group)) == SECURED
    assert acls(zk, znodes.offset_path(group, topic, 0)) == SECURED
    assert committed_offsets(zk, group, topic) == {0: 7}
