"""Our owner nodes under /consumers/<group>/owners: claim, release, wait for others', tell which are still ours.

An owner node is ours only while it holds our thread id and its ephemeralOwner is the session
our member node was registered in (GroupZk.session, asked through `session`): see group.py.
GroupZk holds one OwnerNodes and delegates its ownership methods here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from zkconsumer.errors import ZOOKEEPER_FAILURES, ZooKeeperUnavailable
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper import transactions, znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.fence import SessionFence
from zkconsumer.zookeeper.signals import OwnershipSignals
from zkconsumer.zookeeper.watched import WatchedNodes


class OwnerNodes:
    """One member's owner nodes of `/consumers/<group>/owners`, every write fenced by the registered session.

    Built by GroupZk, which passes its registered session and its folder memo. Example::

        blocked = group.owner_nodes.claim({("orders", 0): "billing_host-...-0"})
    """

    def __init__(
        self,
        io: ZkIO,
        group_id: str,
        *,
        session: Callable[[], int | None],
        fence: Callable[[], SessionFence],
        ensure_folder: Callable[[str], None],
        forget_folders: Callable[[], None],
        signals: OwnershipSignals,
        acl: list[Any] | None = None,
        transaction_max_bytes: int = 0xFFFFF // 2,
    ) -> None:
        self.io = io
        self.signals = signals
        self.client = io.client
        self.group_id = group_id
        self.acl = acl  # of owner nodes and their folders (ZkAuth.node_acl); None: open
        self._session = session  # the session our member node was created in; None before registration
        self._fence = fence  # what every write is fenced on (SessionLost before registration)
        self._ensure_folder = ensure_folder  # creates a folder once (GroupZk's memo of existing folders)
        self._forget_folders = forget_folders  # a folder was deleted under us: check them all again
        self._transaction_max_bytes = transaction_max_bytes
        # Owner nodes as the watches we hold say they are (our own, and those in a claim's way):
        # a rebalance or a watchdog check re-reads only what changed since the last one. A watch on
        # one of our own that fires for a change (not a dropped link) means it may not be ours any
        # more: whoever deleted or rewrote it, delivery of that partition must stop at once.
        self._own_owner_nodes = WatchedNodes(io, on_change=self._own_node_changed)
        self._wanted_owner_nodes = WatchedNodes(io, "read owner nodes to claim")

    def forget_cached(self, *, session_ended: bool = False) -> None:
        """Make the next reads of owner nodes ask ZooKeeper for everything. `session_ended`: our
        owner nodes went with the session, so the events of their watches say nothing about us."""
        self._own_owner_nodes.invalidate(disarm=session_ended)
        self._wanted_owner_nodes.invalidate()

    def _path(self, key: TopicPartition) -> str:
        return znodes.owner_path(self.group_id, key[0], key[1])

    def _key(self, path: str) -> TopicPartition | None:
        folder = znodes.owners_path(self.group_id) + "/"
        topic, _, partition = path[len(folder) :].rpartition("/")
        return (topic, int(partition)) if path.startswith(folder) and topic and partition.isdigit() else None

    def _own_node_changed(self, path: str, event: WatchedEvent) -> None:
        """kazoo's thread: the watch on an owner node we vouch for fired."""
        key = self._key(path)
        if event.type == EventType.NONE or key is None:
            return  # the link dropped: the reconnect rebalances and reads it again
        what = "was deleted" if event.type == EventType.DELETED else "was rewritten"
        self.signals.doubt([key], f"owner node {path} {what} by someone else")

    def claim(self, owners: Mapping[TopicPartition, str], *, partial: bool = False) -> list[TopicPartition]:
        """Create our owner nodes (in transactions of at most transaction_max_bytes); returns the
        partitions someone else still owns.

        All or nothing by default (the legacy claim): if any node is held, nothing is created.
        With `partial`, the nodes nobody holds are created and only the held ones are returned,
        so free partitions do not wait for a neighbour's release. A node that already holds our
        thread id in our session (a claim whose answer was lost) counts as claimed.

        Nodes are created first and read only when a transaction fails (a node is there): in a
        settled hand-over they are free, and a read per node would double the claim's requests.
        A node an earlier claim found held, and whose watch has not fired since, is not tried.
        """
        for topic in sorted({t for t, _ in owners}):
            self._ensure_folder(znodes.owners_path(self.group_id, topic))
        held = self._known_held(owners)
        if held and not partial:
            return held  # the transaction would fail on them: no write, the caller watches them
        todo = {k: v for k, v in owners.items() if k not in held}
        blocked = list(held)
        created: dict[TopicPartition, str] = {}
        for keys in self._claim_transactions(todo):
            chunk = {k: todo[k] for k in keys}
            if self._create_owner_nodes(chunk):
                created.update(chunk)
                continue
            answers = self._read_nodes_to_claim(chunk)  # arms a watch on each node another member holds
            in_way = [k for k, answer in answers.items() if answer is not None and self._ours(answer, chunk[k]) is None]
            free = {k: t for k, t in chunk.items() if answers[k] is None}
            if in_way and not partial:
                self._roll_back(created)
                return sorted(in_way)  # what we knew held returned before any write
            if free and not self._create_owner_nodes(free):  # lost a race for one of them
                if not partial:
                    self._roll_back(created)
                    mine = self._which_are_ours(owners)
                    return sorted(k for k in owners if k not in mine)
                ours = self._which_are_ours(free)  # once per chunk: one pipelined read of its nodes
                in_way += [k for k in free if k not in ours]
                free = {k: t for k, t in free.items() if k in ours}
            created.update(free)
            blocked += in_way
        self._watch_own(created)
        return sorted(blocked)

    def _watch_own(self, owners: Mapping[TopicPartition, str]) -> None:
        """Arm the data watch on nodes we just created, so a deletion or rewrite by someone else is
        heard from now on; one already not ours is reported at once. (The next reconcile would have
        read them anyway: this moves that read, it does not add one.)"""
        if not owners:
            return
        paths = {k: self._path(k) for k in owners}
        try:
            found = self._own_owner_nodes.add(list(paths.values()))
        except ZOOKEEPER_FAILURES:
            # The link dropped: what it took we hear of nothing until the rebalance the reconnect
            # triggers reads every owned node again, as for the watches the drop took with it.
            return
        gone = sorted(k for k, path in paths.items() if self._ours(found[path], owners[k]) is None)
        self.signals.doubt(gone, "owner nodes of " + partitions_text(gone) + " were not ours right after the claim")

    def _known_held(self, owners: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Partitions an earlier claim found another member holding, unchanged since (their watch
        has not fired): no request. A stale answer only delays the claim to the next attempt."""
        paths = {k: self._path(k) for k in owners}
        found = self._wanted_owner_nodes.cached(list(paths.values()))
        return sorted(k for k, path in paths.items() if path in found and self._ours(found[path], owners[k]) is None)

    def _roll_back(self, created: Mapping[TopicPartition, str]) -> None:
        """Delete what an all-or-nothing claim created, as Scala's claim does when one create fails."""
        left = set(created) - set(self.release(created))
        if left:  # the caller schedules every node of the claim for deletion
            raise ZooKeeperUnavailable(f"could not roll back the claim of {partitions_text(left)}")

    def _claim_transactions(self, todo: Mapping[TopicPartition, str]) -> Iterator[list[TopicPartition]]:
        sizes = ((k, transactions.claim_size(self._path(k), znodes.encode_owner(t))) for k, t in todo.items())
        return transactions.batches(sizes, self._transaction_max_bytes)

    def _create_owner_nodes(self, owners: Mapping[TopicPartition, str]) -> bool:
        """One transaction, fenced on our session (fence.py); False if any node was there (someone created
        it since we looked). SessionLost, with nothing created, if our session is gone."""
        fence = self._fence()
        txn = self.client.transaction()
        fence.guard(txn)
        for key, thread_id in owners.items():
            path, data = self._path(key), znodes.encode_owner(thread_id)
            txn.create(path, data, acl=self.acl, ephemeral=True)
            # Version 1 at once: a node created again by anyone else (a Scala member after a blind
            # delete, a tool) starts at 0 and never moves (Scala never writes owner data), so a commit
            # fenced on our node's version fails on it (docs/design.md, "Fencing limits").
            txn.set_data(path, data, version=0)
        what = f"claim {len(owners)} partitions"
        results = self.io.commit(txn, what)
        if fence.refused(results):
            raise self._refused(fence, results, what)
        for result in results:
            if isinstance(result, NoNodeError):  # an owners folder was deleted under us
                self._forget_folders()
        # A failed multi reports the culprit's own error and a rollback marker for the rest.
        return not any(isinstance(r, Exception) for r in results)

    def watch_until_free(
        self, keys: Iterable[TopicPartition], on_free: Callable[[], None], *, any_free: bool = False
    ) -> bool:
        """Watch owner nodes others hold; `on_free` runs (on kazoo's thread) once every one is gone,
        or with `any_free` once the first is.

        Returns True if they are all gone (with `any_free`: any is gone) already. A watch that
        fires for any other reason (the node changed, or the connection dropped and kazoo dropped
        its watches) calls `on_free` too: the caller looks again, as after a fixed back-off.
        """
        pending = {self._path(k) for k in keys}
        lock = threading.Lock()

        def seen(event: WatchedEvent) -> None:  # kazoo reports paths without the chroot
            with lock:
                if event.type == EventType.DELETED:
                    pending.discard(event.path)
                    free = any_free or not pending
                else:
                    free = True
            if free:
                on_free()

        gone = False
        for path in sorted(pending):
            if self._wanted_owner_nodes.when_changed(path, seen):
                continue  # the claim's read already holds a watch there: no second request
            if self.io.exists(path, watch=seen) is None:
                gone = True
                with lock:
                    pending.discard(path)
        with lock:
            return (any_free and gone) or not pending

    def not_ours(self, owners: Mapping[TopicPartition, str], *, watched: bool = False) -> list[TopicPartition]:
        """Which of these owner nodes are gone or no longer hold our thread id in our session.

        `watched`: judge by the nodes' data watches (no request for a node unchanged since the last
        such call; pass every owned node each time, the others are forgotten) and read afresh only
        the nodes that look not ours.
        """
        lost, spoiled = self.lost_and_spoiled(owners, watched=watched)
        return sorted(lost + spoiled)

    def lost_and_spoiled(
        self, owners: Mapping[TopicPartition, str], *, watched: bool = False
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """The owner nodes that are not ours, in two lists: lost (gone, or another session's:
        nothing of ours to delete) and spoiled (still our session's, but holding other data than our
        thread id, rewritten by hand: not ours to deliver, ours to delete). `watched` as in not_ours."""
        if watched:
            paths = {k: self._path(k) for k in owners}
            found = self._own_owner_nodes.read(list(paths.values()))
            owners = {k: v for k, v in owners.items() if self._ours(found[paths[k]], v) is None}
        if not owners:
            return [], []
        answers = self._read_owner_nodes(owners)
        session = self._session()
        lost, spoiled = [], []
        for key in sorted(owners):
            answer = answers[key]
            if answer is None or session is None or answer[1].ephemeralOwner != session:
                lost.append(key)
            elif self._ours(answer, owners[key]) is None:
                spoiled.append(key)
        return lost, spoiled

    def release(self, owners: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Delete our owner nodes; returns every key now confirmed not ours (deleted, gone, or
        another's). A connection failure raises: the caller keeps the rest for a later attempt.

        Which nodes are ours is decided by a fresh (pipelined) read, never by a watch cache: kazoo
        delivers watch events behind the answers, so a cached "ours" can be older than a fresh read
        that would already show another member's node there (also at version 0). Each delete is
        fenced on that version and on our session (fence.py), in transactions; one that fails (a node
        gone or changed) is redone node by node. SessionLost if our session is gone. A node of our
        session is deleted whatever its data says: only our session can have created it, and one
        rewritten by hand would otherwise outlive every release.
        """
        stats = self._stats_in_session(owners)
        confirmed = [k for k, stat in stats.items() if stat is None]
        ours = {k: stat for k, stat in stats.items() if stat is not None}
        sizes = ((k, transactions.create_size(self._path(k), b"")) for k in ours)
        try:
            for keys in transactions.batches(sizes, self._transaction_max_bytes):
                fence = self._fence()
                txn = self.client.transaction()
                fence.guard(txn)
                for key in keys:
                    txn.delete(self._path(key), version=ours[key].version)
                what = f"release {len(keys)} partitions"
                results = self.io.commit(txn, what)
                if fence.refused(results):
                    raise self._refused(fence, results, what)
                if not any(isinstance(r, Exception) for r in results):
                    confirmed += keys
                else:
                    confirmed += self._delete_one_by_one({k: ours[k] for k in keys})
        finally:
            # Our own deletes fire these watches, but their events may come after the same partition
            # is released again (an orphan, a rolled-back claim), by when another member may hold it.
            self._own_owner_nodes.forget([self._path(k) for k in ours])
        return sorted(confirmed)

    def _delete_one_by_one(self, stats: Mapping[TopicPartition, ZnodeStat]) -> list[TopicPartition]:
        """Each delete in its own fenced transaction (sent at once, then awaited)."""
        fence = self._fence()
        sent = {}
        for key, stat in stats.items():
            txn = self.client.transaction()
            fence.guard(txn)
            txn.delete(self._path(key), version=stat.version)
            sent[key] = txn.commit_async()
        confirmed = []
        for key, answer in sent.items():
            what = f"release {self._path(key)}"
            results = self.io.wait(answer, what, [fence.path, self._path(key)])
            if fence.refused(results):
                raise self._refused(fence, results, what)
            failure = results[1] if len(results) > 1 else None
            if isinstance(failure, BadVersionError):
                continue  # rewritten since we looked: look again next attempt
            confirmed.append(key)  # deleted, or gone already (NoNode): nothing left to release
        return confirmed

    def _read_owner_nodes(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[bytes, ZnodeStat] | None]:
        """key -> (data, stat) of its owner node, None where there is none."""
        return self.io.many(((k, self.client.get_async(self._path(k))) for k in keys), "read owner nodes")

    def _read_nodes_to_claim(
        self, owners: Mapping[TopicPartition, str]
    ) -> dict[TopicPartition, tuple[bytes, ZnodeStat] | None]:
        """Like _read_owner_nodes, but a node another member holds is asked for again only after
        its watch fired: a member waiting for a neighbour's release re-reads what was released, not
        every node still in its way. A stale "held" only delays the claim to the next attempt; a
        node that looks ours (a claim whose answer was lost) is confirmed by a fresh read."""
        paths = {k: self._path(k) for k in owners}
        found = self._wanted_owner_nodes.read(list(paths.values()))
        answers = {k: found[path] for k, path in paths.items()}
        looks_ours = [k for k, answer in answers.items() if self._ours(answer, owners[k]) is not None]
        if looks_ours:
            answers.update(self._read_owner_nodes(looks_ours))
        return answers

    def _refused(self, fence: SessionFence, results: list[Any], what: str) -> Exception:
        """A write refused on our fence: say so to whoever re-registers, and return what to raise."""
        error = fence.lost(what, results)
        self.signals.refused(str(error))
        return error

    def _stats_in_session(self, owners: Mapping[TopicPartition, str]) -> dict[TopicPartition, ZnodeStat | None]:
        """key -> stat of the owner node if our registered session holds it (whatever its data), else
        None: a fresh pipelined read, what a release decides on."""
        session = self._session()
        found = self._read_owner_nodes(owners)
        return {
            k: answer[1] if answer is not None and session is not None and answer[1].ephemeralOwner == session else None
            for k, answer in found.items()
        }

    def stats_if_ours(self, owners: Mapping[TopicPartition, str]) -> dict[TopicPartition, ZnodeStat | None]:
        """key -> stat of the owner node if it is ours (our thread id, our session), else None: a
        fresh pipelined read, what fenced writes decide on."""
        return {key: self._ours(answer, owners[key]) for key, answer in self._read_owner_nodes(owners).items()}

    def _which_are_ours(self, owners: Mapping[TopicPartition, str]) -> set[TopicPartition]:
        return {k for k, stat in self.stats_if_ours(owners).items() if stat is not None}

    def stat_if_ours(self, path: str, thread_id: str) -> ZnodeStat | None:
        try:
            answer = self.io.get(path)
        except NoNodeError:
            return None
        return self._ours(answer, thread_id)

    def _ours(self, answer: tuple[bytes, ZnodeStat] | None, thread_id: str) -> ZnodeStat | None:
        """The owner node's stat if it holds our thread id in our registered session, else None."""
        session = self._session()
        if answer is None or session is None:
            return None
        data, stat = answer
        return stat if data == znodes.encode_owner(thread_id) and stat.ephemeralOwner == session else None
