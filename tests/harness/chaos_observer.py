"""A ZooKeeper observer on its own session: the history of a group's owner, member and offset nodes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import DataWatch

from harness.chaos_history import Commit, Incarnation, Presence, Span, now, wall_offset
from zkconsumer.cluster import broker_nodes
from zkconsumer.testing.probes import connect_zk
from zkconsumer.zookeeper import znodes

log = logging.getLogger(__name__)


class ZkObserver:
    """Polls owners, members and topic partitions every `period` s; watches every offset node.

    Owner and member nodes are re-read only when their folder's cversion moved, so a tick
    costs one request per folder. Node identity is the creation zxid: a node deleted and
    re-created between two polls still shows up as two lives. Offsets use data watches
    (their parent's cversion does not move on a write) and are stamped with their mtime.

    Example::

        observer = ZkObserver("127.0.0.1:2181/kafka", "g1", ["orders"])
        observer.start(); ...; observer.stop(); spans = observer.spans
    """

    def __init__(self, hosts: str, group: str, topics: Iterable[str], *, period: float = 0.05) -> None:
        self.hosts = hosts
        self.group = group
        self.period = period
        self._topics: set[str] = set(topics)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"chaos-observer-{group}", daemon=True)
        self._client = None
        self._offset = wall_offset()
        self.spans: list[Span] = []
        self.incarnations: list[Incarnation] = []
        self.presence: list[Presence] = []
        self.commits: list[Commit] = []
        self.errors = 0
        self._open_spans: dict[tuple[str, int], Span] = {}
        self._open_members: dict[str, Incarnation] = {}
        self._open_presence: dict[tuple[str, int], Presence] = {}
        self._cversions: dict[str, int] = {}
        self._topic_zxid: dict[str, tuple[int, int]] = {}  # topic -> (czxid, mzxid) last seen
        self._offset_watches: set[tuple[str, int]] = set()
        self._last_mzxid: dict[tuple[str, int], int] = {}

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        # Reconnect at once after a ZooKeeper restart: kazoo's default back-off (doubling up to
        # a minute) left this observer blind for ~10 s, long enough to miss whole owner nodes.
        self._client = connect_zk(self.hosts, connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.25})
        self._poll()  # the initial state, before anyone acts on the group
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        if self._client is not None:
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # noqa: BLE001 - already gone
                pass

    def add_topic(self, topic: str) -> None:
        with self._lock:
            self._topics.add(topic)

    def wait_ticks(self, n: int = 3) -> None:
        """Sleep long enough for n more polls (so the history includes what just happened)."""
        self._stop.wait(self.period * n + 0.05)

    def to_now(self, zk_ms: int) -> float:
        return zk_ms / 1000.0 - self._offset

    # ---- polling --------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self._poll()
            except Exception as exc:  # noqa: BLE001 - ZooKeeper down or restarting: try next tick
                self.errors += 1
                log.debug("observer poll failed: %s", exc)

    def _poll(self) -> None:
        with self._lock:
            topics = sorted(self._topics)
        self._poll_members()
        for topic in topics:
            self._poll_topic(topic)
            self._poll_owners(topic)

    def _children_if_changed(self, folder: str) -> tuple[list[str], dict[str, tuple[bytes, ZnodeStat]]] | None:
        """None if unchanged since last poll; else the children with data and stat."""
        try:
            children, stat = self._client.get_children(folder, include_data=True)
        except NoNodeError:
            children, stat = [], None
        cversion = stat.cversion if stat is not None else -1
        if self._cversions.get(folder) == cversion:
            return None
        asyncs = {c: self._client.get_async(f"{folder}/{c}") for c in children}
        found = {}
        for child, result in asyncs.items():
            try:
                found[child] = result.get()
            except NoNodeError:
                continue
        if stat is not None:
            self._cversions[folder] = cversion
        else:
            self._cversions.pop(folder, None)
        return children, found

    def _poll_members(self) -> None:
        changed = self._children_if_changed(znodes.ids_path(self.group))
        if changed is None:
            return
        t = now()
        _, found = changed
        with self._lock:
            for member, inc in list(self._open_members.items()):
                if member not in found or found[member][1].czxid != inc.czxid:
                    inc.end = t
                    del self._open_members[member]
            for member, (_, stat) in found.items():
                if member not in self._open_members:
                    inc = Incarnation(member, stat.czxid, self.to_now(stat.ctime))
                    self._open_members[member] = inc
                    self.incarnations.append(inc)

    def _poll_owners(self, topic: str) -> None:
        changed = self._children_if_changed(znodes.owners_path(self.group, topic))
        if changed is None:
            return
        t = now()
        _, found = changed
        current = {}
        for child, (data, stat) in found.items():
            try:
                current[int(child)] = (data.decode(errors="replace"), stat)
            except ValueError:
                continue
        with self._lock:
            for (tp, partition), span in list(self._open_spans.items()):
                if tp != topic:
                    continue
                now_there = current.get(partition)
                if now_there is None or now_there[1].czxid != span.czxid:
                    span.end = t
                    del self._open_spans[(tp, partition)]
            for partition, (owner, stat) in current.items():
                if (topic, partition) not in self._open_spans:
                    span = Span(topic, partition, owner, stat.czxid, self.to_now(stat.ctime))
                    self._open_spans[(topic, partition)] = span
                    self.spans.append(span)

    def _poll_topic(self, topic: str) -> None:
        path = znodes.topic_path(topic)
        try:
            data, stat = self._client.get(path)
        except NoNodeError:
            data, stat = None, None
        ident = (stat.czxid, stat.mzxid) if stat is not None else None
        if self._topic_zxid.get(topic) == ident:
            return
        t = now()
        partitions: set[int] = set()
        if data is not None:
            partitions = set(broker_nodes.decode_topic_partitions(data, path))
        recreated = stat is None or self._topic_zxid.get(topic, (None,))[0] != stat.czxid
        with self._lock:
            for (tp, partition), pr in list(self._open_presence.items()):
                if tp == topic and (recreated or partition not in partitions):
                    pr.end = t
                    del self._open_presence[(tp, partition)]
            if stat is not None:
                for partition in sorted(partitions):
                    if (topic, partition) not in self._open_presence:
                        born = self.to_now(stat.ctime if recreated else stat.mtime)
                        pr = Presence(topic, partition, born)
                        self._open_presence[(topic, partition)] = pr
                        self.presence.append(pr)
        if ident is None:
            self._topic_zxid.pop(topic, None)
        else:
            self._topic_zxid[topic] = ident
        for partition in sorted(partitions):
            self._watch_offset(topic, partition)

    # ---- offsets ----------------------------------------------------------------------------------
    def _watch_offset(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        if key in self._offset_watches:
            return
        self._offset_watches.add(key)
        path = znodes.offset_path(self.group, topic, partition)

        def on_change(data: bytes | None, stat: ZnodeStat | None) -> bool | None:
            if self._stop.is_set():
                return False
            if data is None or stat is None or stat.mzxid <= self._last_mzxid.get(key, -1):
                return None
            self._last_mzxid[key] = stat.mzxid
            try:
                offset = znodes.decode_offset(data, path)
            except Exception:  # noqa: BLE001 - garbage in an offset node is not ours to judge here
                return None
            with self._lock:
                self.commits.append(Commit(topic, partition, offset, self.to_now(stat.mtime)))
            return None

        DataWatch(self._client, path, on_change)

    # ---- results ----------------------------------------------------------------------------------
    def snapshot(self) -> tuple[list[Span], list[Incarnation], list[Presence], list[Commit]]:
        """Copies of the histories so far (open intervals stay open: end None)."""
        with self._lock:
            copy = lambda items: [type(i)(**i.__dict__) for i in items]  # noqa: E731
            return copy(self.spans), copy(self.incarnations), copy(self.presence), list(self.commits)
