"""The kazoo adapter: a member's registration, group reads, owner claims/releases, offsets, watches."""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NodeExistsError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from zkconsumer import zkdata
from zkconsumer.zkdata import BrokerInfo, Registration, ZkDataError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class RegistrationConflict(RuntimeError):
    """Another live ZooKeeper session holds our member node: a duplicate consumer.id."""


class GroupZk:
    """One member's view of `/consumers/<group>` and the broker metadata it needs.

    Every write is fenced by session: owner nodes are deleted, and offsets written, only
    while the owner node is the one this session created.

    Example::

        group = GroupZk(client, "billing", "billing_host-1510000000000-1a2b3c4d")
        group.ensure_paths()
        group.register(registration_bytes)
        conflicts = group.claim({("orders", 0): "billing_host-...-0"})
    """

    def __init__(self, client: KazooClient, group_id: str, consumer_id: str) -> None:
        self.client = client
        self.group_id = group_id
        self.consumer_id = consumer_id
        self.member_path = zkdata.member_path(group_id, consumer_id)
        self._ensured: set[str] = set()
        self._closed = False

    @property
    def session_id(self) -> int | None:
        ident = self.client.client_id
        return ident[0] if ident else None

    # ---- registration ----------------------------------------------------------------------
    def ensure_paths(self) -> None:
        """Create the group's persistent folders (kazoo's ChildrenWatch dies on a missing node)."""
        for path in (zkdata.ids_path(self.group_id), zkdata.owners_path(self.group_id),
                     zkdata.offsets_path(self.group_id), zkdata.BROKER_IDS, zkdata.BROKER_TOPICS):
            self._ensure(path)

    def register(self, data: bytes, *, wait_for_stale_s: float = 0.0) -> None:
        """Create our ephemeral member node, session-checked (KAFKA-1387).

        A node from *this* session (a retried create) is accepted and refreshed. A node held
        by another session may be our own previous process's, which vanishes within its
        session timeout: wait up to `wait_for_stale_s` for that, then raise RegistrationConflict.
        """
        deadline = time.monotonic() + wait_for_stale_s
        while True:
            try:
                self.client.create(self.member_path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                pass
            try:
                current, stat = self.client.get(self.member_path)
            except NoNodeError:
                continue  # vanished between create and get: try again
            if stat.ephemeralOwner == self.session_id:
                if current != data:
                    self.client.set(self.member_path, data)
                return
            if time.monotonic() >= deadline:
                raise RegistrationConflict(
                    f"{self.member_path} is held by another live ZooKeeper session "
                    f"(0x{stat.ephemeralOwner:x}): consumer id {self.consumer_id!r} is already in use")
            gone = threading.Event()
            if self.client.exists(self.member_path, watch=lambda _e: gone.set()) is not None:
                gone.wait(max(0.0, deadline - time.monotonic()))

    def is_registered(self) -> bool:
        stat = self.client.exists(self.member_path)
        return stat is not None and stat.ephemeralOwner == self.session_id

    # ---- reads -------------------------------------------------------------------------------
    def member_ids(self) -> list[str]:
        return sorted(self.client.get_children(zkdata.ids_path(self.group_id)))

    def read_registrations(self) -> tuple[dict[str, Registration], dict[str, ZkDataError]]:
        """Every member's registration, and separately those that could not be decoded."""
        ids = self.member_ids()
        paths = {cid: zkdata.member_path(self.group_id, cid) for cid in ids}
        asyncs = {cid: self.client.get_async(path) for cid, path in paths.items()}
        good: dict[str, Registration] = {}
        bad: dict[str, ZkDataError] = {}
        for cid, result in asyncs.items():
            try:
                data, _ = result.get()
            except NoNodeError:
                continue  # left while we were reading
            try:
                good[cid] = Registration.decode(data, paths[cid])
            except ZkDataError as exc:
                bad[cid] = exc
        return good, bad

    def all_topics(self) -> list[str]:
        return sorted(self.client.get_children(zkdata.BROKER_TOPICS))

    def partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """topic -> sorted partition ids; a topic without a node has none (as in Scala)."""
        return {t: parts for t, (parts, _) in self.topics(topics).items()}

    def topics(self, topics: Iterable[str]) -> dict[str, tuple[list[int], int | None]]:
        """topic -> (sorted partition ids, epoch); a topic without a node has ([], None).

        The epoch is the topic node's czxid: it changes when a topic is deleted and created
        again under the same name, and never otherwise (adding partitions only sets data).
        """
        asyncs = {t: self.client.get_async(zkdata.topic_path(t)) for t in set(topics)}
        out: dict[str, tuple[list[int], int | None]] = {}
        for topic, result in sorted(asyncs.items()):
            try:
                data, stat = result.get()
            except NoNodeError:
                out[topic] = ([], None)
                continue
            out[topic] = (sorted(zkdata.decode_topic_partitions(data, zkdata.topic_path(topic))), stat.czxid)
        return out

    def topic_epochs(self, topics: Iterable[str]) -> dict[str, int | None]:
        """topic -> the czxid of its node now (None: the topic does not exist)."""
        asyncs = {t: self.client.exists_async(zkdata.topic_path(t)) for t in set(topics)}
        return {t: (stat.czxid if stat is not None else None) for t, stat in ((t, r.get()) for t, r in asyncs.items())}

    def brokers(self) -> list[BrokerInfo]:
        """Every registered broker (a garbled node raises ZkDataError, failing the attempt)."""
        ids = self.client.get_children(zkdata.BROKER_IDS)
        out = []
        for raw in sorted(ids, key=lambda s: (len(s), s)):
            path = zkdata.broker_path(int(raw))
            try:
                data, _ = self.client.get(path)
            except NoNodeError:
                continue
            out.append(zkdata.decode_broker(int(raw), data, path))
        return out

    def read_offsets(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets; -1 where none exists, or where it predates the topic itself.

        Offset nodes outlive a deleted topic; one last written before the current topic node
        was created belongs to the old incarnation, and resuming from it would silently skip
        the new topic's first messages, so it counts as absent (auto.offset.reset applies).
        """
        keys = list(keys)
        created = self.topic_epochs(t for t, _ in keys)
        asyncs = {k: self.client.get_async(zkdata.offset_path(self.group_id, *k)) for k in keys}
        out: dict[TopicPartition, int] = {}
        for key, result in asyncs.items():
            path = zkdata.offset_path(self.group_id, *key)
            try:
                data, stat = result.get()
            except NoNodeError:
                out[key] = -1
                continue
            born = created[key[0]]
            if born is not None and stat.mzxid < born:
                log.warning("%s was committed before topic %s was (re)created; ignoring it", path, key[0])
                out[key] = -1
                continue
            out[key] = zkdata.decode_offset(data, path)
        return out

    def owners(self, topic: str) -> dict[int, str]:
        """partition -> owner thread id for one topic (missing folder: no owners)."""
        folder = zkdata.owners_path(self.group_id, topic)
        try:
            children = self.client.get_children(folder)
        except NoNodeError:
            return {}
        out = {}
        for child in children:
            path = f"{folder}/{child}"
            try:
                data, _ = self.client.get(path)
            except NoNodeError:
                continue
            out[int(child)] = zkdata.decode_owner(data, path)
        return out

    # ---- ownership -----------------------------------------------------------------------------
    def claim(self, owners: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Create every owner node in one transaction: all or nothing.

        Returns the partitions someone else still owns (empty on success). A node that
        already holds our thread id in our session (a retried claim) counts as claimed.
        """
        for topic in {t for t, _ in owners}:
            self._ensure(zkdata.owners_path(self.group_id, topic))
        todo = {k: v for k, v in owners.items() if not self._is_ours(self._owner_path(k), v)}
        if not todo:
            return []
        txn = self.client.transaction()
        for key, thread_id in todo.items():
            txn.create(self._owner_path(key), zkdata.encode_owner(thread_id), ephemeral=True)
        results = txn.commit()
        failed = [k for k, r in zip(todo, results) if isinstance(r, Exception)]
        if not failed:
            return []
        # A failed multi reports the culprit's own error and a rollback marker for the rest:
        # look at each node to say who is in the way.
        return sorted(k for k in todo if not self._is_ours(self._owner_path(k), todo[k]))

    def not_ours(self, owners: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Which of these owner nodes are gone or no longer hold our thread id in our session."""
        asyncs = {k: self.client.get_async(self._owner_path(k)) for k in owners}
        lost = []
        for key, result in asyncs.items():
            try:
                data, stat = result.get()
            except NoNodeError:
                lost.append(key)
                continue
            if data != zkdata.encode_owner(owners[key]) or stat.ephemeralOwner != self.session_id:
                lost.append(key)
        return sorted(lost)

    def release(self, owners: Mapping[TopicPartition, str]) -> None:
        """Delete our owner nodes; a node that is not ours (anymore) is left alone."""
        for key, thread_id in owners.items():
            self._delete_if_ours(self._owner_path(key), zkdata.encode_owner(thread_id))

    # ---- offsets -------------------------------------------------------------------------------
    def commit_offsets(self, offsets: Mapping[TopicPartition, int],
                       owners: Mapping[TopicPartition, str]) -> dict[TopicPartition, bool]:
        """Write each offset only while we own the partition (owner check in the same multi).

        Returns key -> written. Scala writes unconditionally; fencing keeps a member that
        lost its partitions from overwriting the new owner's progress.
        """
        results: dict[TopicPartition, bool] = {}
        for key, offset in offsets.items():
            results[key] = self._commit_one(key, offset, owners[key])
        return results

    def _commit_one(self, key: TopicPartition, offset: int, thread_id: str) -> bool:
        owner_path = self._owner_path(key)
        offset_path = zkdata.offset_path(self.group_id, *key)
        data = zkdata.encode_offset(offset)
        for _ in range(3):  # the offset node may appear or vanish under us: re-decide
            stat = self._owner_stat_if_ours(owner_path, thread_id)
            if stat is None:
                log.warning("not committing %s-%d=%d: %s is no longer ours", key[0], key[1], offset, owner_path)
                return False
            exists = self.client.exists(offset_path) is not None
            if not exists:
                self._ensure(zkdata.offsets_path(self.group_id, key[0]))
            txn = self.client.transaction()
            txn.check(owner_path, stat.version)
            if exists:
                txn.set_data(offset_path, data)
            else:
                txn.create(offset_path, data)
            if not any(isinstance(r, Exception) for r in txn.commit()):
                return True
        return False

    def withdraw_offset(self, key: TopicPartition, offset: int, thread_id: str) -> bool:
        """Delete the offset node if it still holds `offset` and we still own the partition (one multi)."""
        owner_path = self._owner_path(key)
        offset_path = zkdata.offset_path(self.group_id, *key)
        owner = self._owner_stat_if_ours(owner_path, thread_id)
        if owner is None:
            return False
        try:
            data, stat = self.client.get(offset_path)
        except NoNodeError:
            return False
        if data != zkdata.encode_offset(offset):
            return False
        txn = self.client.transaction()
        txn.check(owner_path, owner.version)
        txn.delete(offset_path, version=stat.version)
        return not any(isinstance(r, Exception) for r in txn.commit())

    # ---- watches -------------------------------------------------------------------------------
    def watch_members(self, on_change: Callable[[list[str]], None]) -> None:
        self._children_watch(zkdata.ids_path(self.group_id), on_change)

    def watch_topic_list(self, on_change: Callable[[list[str]], None]) -> None:
        self._children_watch(zkdata.BROKER_TOPICS, on_change)

    def watch_brokers(self, on_change: Callable[[list[str]], None]) -> None:
        self._children_watch(zkdata.BROKER_IDS, on_change)

    def watch_topic(self, topic: str, on_change: Callable[[int | None], None],
                    still_wanted: Callable[[], bool]) -> None:
        """Call on_change(epoch) when the topic's partition map changes (or it is created/deleted).

        epoch is the topic node's czxid now, None once the topic is gone (see topics()).
        """
        def fn(_data: bytes | None, stat: ZnodeStat | None) -> bool | None:
            if self._closed or not still_wanted():
                return False  # tells kazoo to drop this watch
            on_change(stat.czxid if stat is not None else None)
            return None
        DataWatch(self.client, zkdata.topic_path(topic), fn)

    def close(self) -> None:
        """Stop every watch at its next event (kazoo recipes stop when the callback says False)."""
        self._closed = True

    def _children_watch(self, path: str, on_change: Callable[[list[str]], None]) -> None:
        self._ensure(path)

        def fn(children: list[str]) -> bool | None:
            if self._closed:
                return False
            on_change(children)
            return None
        ChildrenWatch(self.client, path, fn)

    # ---- helpers -------------------------------------------------------------------------------
    def _owner_path(self, key: TopicPartition) -> str:
        return zkdata.owner_path(self.group_id, key[0], key[1])

    def _ensure(self, path: str) -> None:
        if path not in self._ensured:
            self.client.ensure_path(path)
            self._ensured.add(path)

    def _owner_stat_if_ours(self, path: str, thread_id: str) -> ZnodeStat | None:
        try:
            data, stat = self.client.get(path)
        except NoNodeError:
            return None
        if data != zkdata.encode_owner(thread_id) or stat.ephemeralOwner != self.session_id:
            return None
        return stat

    def _is_ours(self, path: str, thread_id: str) -> bool:
        return self._owner_stat_if_ours(path, thread_id) is not None

    def _delete_if_ours(self, path: str, expected: bytes) -> None:
        try:
            data, stat = self.client.get(path)
        except NoNodeError:
            return
        if stat.ephemeralOwner != self.session_id or data != expected:
            log.info("leaving %s alone: it belongs to another session or thread", path)
            return
        try:
            self.client.delete(path, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass
