"""A member's ZooKeeper work on /consumers/<group>: registration and its session fence, group reads,
and, through the OwnerNodes and OffsetNodes it holds, fenced claims, releases and commits.

Fencing: an owner node is ours only while its ephemeralOwner is the session we registered in
(`self.session`). That session id is recorded at registration and never replaced by kazoo's
live `client_id`, which is None whenever the link is down: a node of session X exists only
while X lives, so comparing with X is exact, and a reconnect never makes our own nodes look
foreign. Every claim, release and commit transaction opens with a check of our session fence
(fence.SessionFence), so ZooKeeper refuses it once that session is gone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from zkconsumer.errors import ZOOKEEPER_FAILURES, RegistrationConflict, SessionLost, ZkDataError, ZooKeeperUnavailable
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import transactions, znodes
from zkconsumer.zookeeper.client import Watch, ZkIO
from zkconsumer.zookeeper.fence import SessionFence
from zkconsumer.zookeeper.group_reads import GroupReads, decode_owners
from zkconsumer.zookeeper.nudge import nudge_group
from zkconsumer.zookeeper.offset_nodes import OffsetNodes
from zkconsumer.zookeeper.owner_nodes import OwnerNodes
from zkconsumer.zookeeper.signals import OwnershipSignals
from zkconsumer.zookeeper.znodes import Registration

log = logging.getLogger(__name__)


__all__ = ["GroupZk"]


class GroupZk:
    """One member's view of `/consumers/<group>`, every write fenced by the registered session.

    Example::

        group = GroupZk(client, "billing", "billing_host-1510000000000-1a2b3c4d")
        group.ensure_paths()
        group.register(registration_bytes)
        conflicts = group.claim({("orders", 0): "billing_host-...-0"})
    """

    def __init__(
        self,
        client: Any,
        group_id: str,
        consumer_id: str,
        *,
        timeout_s: float = 30.0,
        transaction_max_bytes: int = 0xFFFFF // 2,
        identity: str = "this client",
        acl: list[Any] | None = None,
    ) -> None:
        self.client = client
        self.io = ZkIO(client, timeout_s, identity)
        self.acl = acl  # of owner and offset nodes and their folders (ZkAuth.node_acl); None: open
        self.group_id = group_id
        self.consumer_id = consumer_id
        self.member_path = znodes.member_path(group_id, consumer_id)
        self.fence: SessionFence | None = None  # our registration, set when we register
        # An owner node found not ours, a write refused on our fence: the member subscribes to act.
        self.signals = OwnershipSignals()
        self._ensured: set[str] = set()
        # Registrations and owner nodes as the watches we hold say they are: a rebalance or a
        # watchdog check re-reads only what changed since the last one.
        self.reads = GroupReads(self.io, group_id)
        self.owner_nodes = OwnerNodes(
            self.io,
            group_id,
            session=lambda: self.session,
            fence=self.require_fence,
            ensure_folder=self._ensure,
            forget_folders=self._ensured.clear,
            signals=self.signals,
            acl=acl,
            transaction_max_bytes=transaction_max_bytes,
        )
        self.offset_nodes = OffsetNodes(
            self.io,
            group_id,
            owner_nodes=self.owner_nodes,
            fence=self.require_fence,
            ensure_folder=self._ensure,
            forget_folder=self._ensured.discard,
            signals=self.signals,
            acl=acl,
        )
        # kazoo runs state listeners at once on its connection thread, but queues the NONE events
        # that tell each watch it is gone: a read right after a reconnect could still trust the
        # caches, whose watches died with the link. Everything is forgotten at the drop instead.
        add_listener = getattr(client, "add_listener", None)
        if add_listener is not None:
            add_listener(self._on_connection_state)

    def _on_connection_state(self, state: str) -> None:
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.forget_cached_reads(session_ended=state == KazooState.LOST)

    def forget_cached_reads(self, *, session_ended: bool = False) -> None:
        """Make the next reads of registrations and owner nodes ask ZooKeeper for everything."""
        self.reads.forget()
        self.owner_nodes.forget_cached(session_ended=session_ended)

    @property
    def session(self) -> int | None:
        """The session our member node was created in; None before we registered."""
        fence = self.fence
        return fence.session if fence is not None else None

    def require_fence(self) -> SessionFence:
        """What our writes are fenced on; SessionLost before we registered."""
        fence = self.fence
        if fence is None:
            raise SessionLost(f"{self.member_path} is not registered yet: nothing may be written for it")
        return fence

    @property
    def live_session(self) -> int | None:
        """kazoo's session id right now; None while disconnected (not a new session!)."""
        ident = self.client.client_id
        return ident[0] if ident else None

    # ---- registration ----------------------------------------------------------------------
    def ensure_paths(self) -> None:
        for path in (
            znodes.ids_path(self.group_id),
            znodes.owners_path(self.group_id),
            znodes.offsets_path(self.group_id),
            znodes.BROKER_IDS,
            znodes.BROKER_TOPICS,
        ):
            self._ensure(path)

    def register(self, data: bytes, *, wait_for_stale_s: float = 0.0) -> int:
        """Create our ephemeral member node (KAFKA-1387) and return the session it belongs to.

        A node of the current session (a create whose answer was lost) is accepted and refreshed.
        A node of another session may be our previous process's, which vanishes within its
        session timeout: wait up to `wait_for_stale_s` for that, then raise RegistrationConflict.
        """
        deadline = time.monotonic() + wait_for_stale_s
        while True:
            session = self.live_session
            if session is None:
                raise ZooKeeperUnavailable(f"cannot register {self.member_path}: not connected to ZooKeeper")
            try:
                self._ensure(znodes.ids_path(self.group_id))
                self.io.create(self.member_path, data, ephemeral=True)
                return self._fence_session(session)
            except NoNodeError:  # the ids folder was deleted under us: create it again
                self._ensured.discard(znodes.ids_path(self.group_id))
                continue
            except NodeExistsError:
                pass
            try:
                current, stat = self.io.get(self.member_path)
            except NoNodeError:
                continue  # vanished between create and get: try again
            if stat.ephemeralOwner == session:
                if current != data:
                    self.io.set(self.member_path, data, version=stat.version)
                return self._fence_session(session)
            if time.monotonic() >= deadline:
                raise RegistrationConflict(
                    f"{self.member_path} is held by another live ZooKeeper session "
                    f"(0x{stat.ephemeralOwner:x}): consumer id {self.consumer_id!r} is already in use"
                )
            gone = threading.Event()
            held = self.io.exists(self.member_path, watch=lambda _e: gone.set())  # noqa: B023 - waited on below
            if held is not None:
                gone.wait(max(0.0, min(1.0, deadline - time.monotonic())))

    def _fence_session(self, session: int) -> int:
        """Create our fence node in `session` (fence.py) once our member node is there; returns the session."""
        folder = znodes.zkconsumer_sessions_path(self.group_id)
        old = self.fence
        try:
            self._ensure(folder)
            path = self.io.create(
                znodes.session_fence_prefix(self.group_id, self.consumer_id), b"", ephemeral=True, sequence=True
            )
        except NoNodeError:  # the folder was deleted under us: the next attempt creates it again
            self._ensured.discard(folder)
            raise ZooKeeperUnavailable(f"{folder} was deleted while registering; registering again") from None
        stat = self.io.exists(path)
        if stat is None or stat.ephemeralOwner != session:  # kazoo moved to another session in between
            raise SessionLost(f"session 0x{session:x} ended while registering; registering again")
        self.fence = SessionFence(path, session)
        if old is not None and old.session == session and old.path != path:
            try:  # re-registered in the same session (our member node was deleted by hand): tidy up
                self.io.delete(old.path)
            except ZOOKEEPER_FAILURES:
                pass  # it goes with the session anyway
        return session

    def mark_as_zkconsumer(self, data: bytes) -> bool:
        """Create our marker node in the live session (before registering, so whoever sees our
        registration sees the marker too); True once it exists in that session.

        Scala members never write one, so a member without a marker may be a Scala member (see
        ReleaseLinger). A marker still held by an older session of ours goes with that session;
        until then we count as unmarked, which only costs a linger.
        """
        session = self.live_session
        if session is None:
            return False
        path = znodes.zkconsumer_member_path(self.group_id, self.consumer_id)
        try:
            self._ensure(znodes.zkconsumer_members_path(self.group_id))
            self.io.create(path, data, ephemeral=True)
            return True
        except NoNodeError:  # the folder was deleted under us: next attempt creates it again
            self._ensured.discard(znodes.zkconsumer_members_path(self.group_id))
            return False
        except NodeExistsError:
            stat = self.io.exists(path)
            return stat is not None and stat.ephemeralOwner == session

    def rewrite_marker(self, data: bytes) -> bool:
        """Put `data` in our marker if the live session holds it; False (nothing written) otherwise."""
        session = self.live_session
        path = znodes.zkconsumer_member_path(self.group_id, self.consumer_id)
        stat = self.io.exists(path)
        if session is None or stat is None or stat.ephemeralOwner != session:
            return False
        try:
            self.io.set(path, data, version=stat.version)
        except (BadVersionError, NoNodeError):
            return False
        return True

    def unmark_as_zkconsumer(self) -> None:
        """Delete our marker if the live session holds it (best effort: ZooKeeper errors are logged)."""
        session = self.live_session
        path = znodes.zkconsumer_member_path(self.group_id, self.consumer_id)
        try:
            stat = self.io.exists(path)
            if stat is not None and stat.ephemeralOwner == session:
                self.io.delete(path, version=stat.version)
        except ZOOKEEPER_FAILURES as exc:
            log.warning("%s: could not delete our zkconsumer marker %s: %r", self.consumer_id, path, exc)

    def zkconsumer_members(self) -> set[str]:
        """Consumer ids of the members that marked themselves as zkconsumer members."""
        try:
            return set(self.io.children(znodes.zkconsumer_members_path(self.group_id)))
        except NoNodeError:
            return set()

    def is_registered(self) -> bool:
        """Whether our member node and our fence node are both there, in the session we registered in,
        and the fence would pass its check (version 0, as every fenced write requires: a fence node
        written to by hand refuses every write, so it must count as not registered). One pipelined round."""
        fence = self.fence
        if fence is None:
            return False
        found = self.io.many(
            ((path, self.client.exists_async(path)) for path in (self.member_path, fence.path)), "read our registration"
        )
        member = found[self.member_path]
        return member is not None and member.ephemeralOwner == fence.session and fence.holds(found[fence.path])

    def close_size(self, owned: Iterable[TopicPartition]) -> int:
        """What the transaction that closes our session will weigh on a ZooKeeper 3.6+ server with
        these owner nodes held (our registration and marker included): transactions.close_session_size."""
        chroot = getattr(self.client, "chroot", "") or ""
        paths = [self.member_path, znodes.zkconsumer_member_path(self.group_id, self.consumer_id)]
        paths += [self._owner_path(key) for key in owned]
        return transactions.close_session_size(chroot + path for path in paths)

    # ---- group reads -----------------------------------------------------------------------
    def read_registrations(self, watch: Watch | None = None) -> tuple[dict[str, Registration], dict[str, ZkDataError]]:
        """Every member's registration, and separately those that could not be decoded (cached:
        see GroupReads.registrations). `watch` runs when the list of members changes."""
        return self.reads.registrations(watch, own_id=self.consumer_id if self.session is not None else None)

    def nudge_members(self) -> str:
        """Make every member rebalance, Scala members that gave up included (nudge.nudge_group: a
        child of ids/ created and deleted in one transaction); returns the child's path."""
        path, _stat = nudge_group(self.io, self.group_id)
        return path

    def member_ids(self, watch: Watch | None = None) -> list[str]:
        return sorted(self.io.children(znodes.ids_path(self.group_id), watch=watch))

    def owners(self, topic: str) -> dict[int, str]:
        """partition -> owner thread id for one topic, read afresh and setting no watch: for
        one-shot readers such as a Spark plan (a member's repeated checks use `reads.owner_threads`)."""
        folder = znodes.owners_path(self.group_id, topic)
        try:
            children = self.io.children(folder)
        except NoNodeError:
            return {}
        found = self.io.many(((c, self.client.get_async(f"{folder}/{c}")) for c in children), "read owners")
        return decode_owners(folder, {c: answer for c, answer in found.items() if answer is not None})

    # ---- ownership: owner_nodes.OwnerNodes ------------------------------------------------------
    def claim(self, owners: Mapping[TopicPartition, str], *, partial: bool = False) -> list[TopicPartition]:
        """Create our owner nodes; returns the partitions someone else still owns (see OwnerNodes.claim)."""
        return self.owner_nodes.claim(owners, partial=partial)

    def watch_until_free(
        self, keys: Iterable[TopicPartition], on_free: Callable[[], None], *, any_free: bool = False
    ) -> bool:
        """Watch owner nodes others hold; `on_free` runs once they are gone (see OwnerNodes.watch_until_free)."""
        return self.owner_nodes.watch_until_free(keys, on_free, any_free=any_free)

    def not_ours(self, owners: Mapping[TopicPartition, str], *, watched: bool = False) -> list[TopicPartition]:
        """Which of these owner nodes are gone or no longer ours (see OwnerNodes.not_ours)."""
        return self.owner_nodes.not_ours(owners, watched=watched)

    def release(self, owners: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Delete our owner nodes; returns every key now confirmed not ours (see OwnerNodes.release)."""
        return self.owner_nodes.release(owners)

    # ---- offsets: offset_nodes.OffsetNodes ------------------------------------------------------
    def read_offsets(
        self, keys: Iterable[TopicPartition], topic_epochs: Mapping[str, int | None]
    ) -> dict[TopicPartition, int]:
        """Committed offsets; -1 where none exists or it predates its topic (see OffsetNodes.read)."""
        return self.offset_nodes.read(keys, topic_epochs)

    def read_offsets_versioned(
        self, keys: Iterable[TopicPartition], topic_epochs: Mapping[str, int | None]
    ) -> dict[TopicPartition, tuple[int, int | None]]:
        """Committed offsets with their nodes' versions (see OffsetNodes.read_versioned)."""
        return self.offset_nodes.read_versioned(keys, topic_epochs)

    def commit_offsets(
        self, offsets: Mapping[TopicPartition, int], owners: Mapping[TopicPartition, str], *, attempts: int = 3
    ) -> dict[TopicPartition, bool]:
        """Write offsets while we own their partitions; key -> written (see OffsetNodes.commit)."""
        return self.offset_nodes.commit(offsets, owners, attempts=attempts)

    def withdraw_offset(self, key: TopicPartition, offset: int, thread_id: str) -> bool:
        """Delete an offset node that still holds `offset` while we own it (see OffsetNodes.withdraw)."""
        return self.offset_nodes.withdraw(key, offset, thread_id)

    # ---- helpers -------------------------------------------------------------------------------
    def _owner_path(self, key: TopicPartition) -> str:
        return znodes.owner_path(self.group_id, key[0], key[1])

    def _ensure(self, path: str) -> None:
        if path not in self._ensured:
            # owners/ and offsets/ get our ACL; the group node and ids/ stay open (created first)
            secured = path.startswith((znodes.owners_path(self.group_id), znodes.offsets_path(self.group_id)))
            self.io.ensure_path(path, self.acl if secured else None)
            self._ensured.add(path)
