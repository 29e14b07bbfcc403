"""Deterministic in-memory ZooKeeper ensemble: znodes, sessions, a logical clock and faults, for the sim tier."""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
    ZookeeperError,
)
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent, ZnodeStat

log = logging.getLogger(__name__)
T = TypeVar("T")
Watcher = Callable[[WatchedEvent], object]
Listener = Callable[[str], object]


class SimError(RuntimeError):
    """The driver asked for what no real process could do (use a crashed/frozen client, block forever)."""


class SimBlocked(SimError):
    """A retry loop waits for a reconnection, which in the sim only the driver can grant."""


class FaultKind(enum.Enum):
    FAIL_BEFORE = "fail_before"  # ConnectionLoss; the op never reached the server
    FAIL_AFTER = "fail_after"  # the op was applied, its reply lost: ConnectionLoss
    EXPIRE_BEFORE = "expire_before"  # the session expires first (full LOST cycle); SessionExpiredError
    SLOW = "slow"  # delay_ms of logical time pass before the op is applied


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    drop_link: bool = True  # FAIL_*: kazoo raises ConnectionLoss only when the socket died: stay SUSPENDED
    delay_ms: int = 0  # SLOW only


FAIL_BEFORE, FAIL_AFTER = Fault(FaultKind.FAIL_BEFORE), Fault(FaultKind.FAIL_AFTER)
EXPIRE_BEFORE = Fault(FaultKind.EXPIRE_BEFORE)
FaultHook = Callable[["FakeKazooClient", str, str], Fault | FaultKind | None]


def slow(ms: int) -> Fault:
    return Fault(FaultKind.SLOW, delay_ms=ms)


def at_call(model: ZkModel, n: int, fault: Fault) -> FaultHook:
    """A hook injecting `fault` at the n-th call (1-based) counted in model.calls."""
    return lambda _client, _op, _path: fault if len(model.calls) == n else None


class Call(NamedTuple):
    client: str
    op: str  # create exists get get_children set delete multi
    path: str  # for multi: the first op's path


class _Op(NamedTuple):
    kind: str  # create | check | set | delete
    path: str
    value: bytes = b""
    version: int = -1
    ephemeral: bool = False


@dataclass
class _Node:
    data: bytes
    czxid: int
    ctime: int
    owner: int = 0
    mzxid: int = 0
    mtime: int = 0
    pzxid: int = 0
    version: int = 0
    cversion: int = 0
    children: dict[str, None] = field(default_factory=dict)  # a dict keeps child order deterministic

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            self.czxid,
            self.mzxid,
            self.ctime,
            self.mtime,
            self.version,
            self.cversion,
            0,
            self.owner,
            len(self.data),
            len(self.children),
            self.pzxid,
        )


@dataclass
class _Session:
    id: int
    passwd: bytes
    timeout_ms: int
    client: FakeKazooClient
    last_heard: int
    alive: bool = True


@dataclass
class _Item:
    client: FakeKazooClient
    fn: Callable[..., object]
    args: tuple[Any, ...]
    listener: bool = False


def _validate(path: str) -> None:
    if not isinstance(path, str):
        raise TypeError("Invalid type for 'path' (string expected)")
    parts = path.split("/")
    if path != "/" and (parts[0] != "" or any(p in ("", ".", "..") for p in parts[1:])):
        raise BadArgumentsError(f"invalid path {path!r}")


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


class ZkModel:
    """One ZooKeeper ensemble: znodes, sessions, a logical clock (ms) and one ordered queue of callbacks."""

    def __init__(
        self,
        *,
        tick_ms: int = 2000,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int | None = None,
        round_expiry_to_tick: bool = True,
        queue_while_suspended: bool = True,
    ) -> None:
        self.tick_ms, self.round_expiry_to_tick = tick_ms, round_expiry_to_tick
        # kazoo queues a request made while SUSPENDED and sends it on reconnect; False fails it at once
        self.queue_while_suspended = queue_while_suspended
        self.min_session_timeout_ms = min_session_timeout_ms or 2 * tick_ms  # ZooKeeper's defaults
        self.max_session_timeout_ms = max_session_timeout_ms or 20 * tick_ms
        self.calls: list[Call] = []
        self.callback_errors: list[tuple[str, BaseException]] = []  # kazoo logs and swallows these
        self._now = self._zxid = self._session_seq = 0
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0)}
        self._sessions: dict[int, _Session] = {}
        self._clients: dict[str, FakeKazooClient] = {}
        self._queue: deque[_Item] = deque()
        self._hook: FaultHook | None = None
        self._undo: dict[str, _Node | None] = {}
        self._triggers: list[tuple[str, str]] = []

    # ---- driver API ---------------------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        return self._now

    @property
    def last_zxid(self) -> int:
        return self._zxid

    def client(self, name: str, timeout: float = 10.0, command_retry: dict[str, Any] | None = None) -> FakeKazooClient:
        return FakeKazooClient(self, name, timeout, command_retry)

    def set_fault_hook(self, fn: FaultHook | None) -> None:
        self._hook = fn

    def advance(self, ms: int) -> None:
        """Let logical time pass; sessions not heard from expire in deadline order, at their deadline."""
        if ms < 0:
            raise ValueError("time only moves forward")
        target = self._now + ms
        for s in self._sessions.values():
            if self._heard(s):
                s.last_heard = target
        while due := [s for s in self._sessions.values() if self._deadline(s) <= target]:
            first = min(due, key=lambda s: (self._deadline(s), s.id))
            self._now = max(self._now, self._deadline(first))
            self._kill_session(first)
        self._now = target

    def expire(self, target: FakeKazooClient | int, *, suspend_first: bool = True) -> None:
        """Expire a session now; a connected owner sees (SUSPENDED,) LOST, then CONNECTED on a new session.

        suspend_first is what a real server expiry looks like (it closes the socket first);
        False is kazoo's own test harness, which goes straight to LOST.
        """
        s = target._session if isinstance(target, FakeKazooClient) else self._sessions.get(target)
        if s is None or not s.alive:
            return
        self._kill_session(s)
        c = s.client
        if c._session is s and c._connected and not c._frozen:
            if suspend_first:
                c._suspend()
            c._connect()

    def disconnect(self, c: FakeKazooClient) -> None:
        c._link = False
        if c._session is not None and self._heard(c._session):
            c._session.last_heard = self._now  # heard until the link broke
        if c._connected:
            c._suspend()

    def reconnect(self, c: FakeKazooClient) -> None:
        c._link = True
        if not (c._stopped or c._connected or c._frozen or c._crashed):
            c._connect()

    def freeze(self, c: FakeKazooClient) -> None:
        """The whole process stops (GC pause, SIGSTOP): no pings, no callbacks, until thaw()."""
        c._frozen = True

    def thaw(self, c: FakeKazooClient) -> None:
        c._frozen = False
        if c._connected and c._session is not None and not c._session.alive:
            c._suspend()  # the server closed the socket when it expired the session
            c._connect()

    def crash(self, c: FakeKazooClient) -> None:
        """The process died: its session lingers until its timeout passes; nothing reaches it again."""
        c._crashed, c._connected, c._listeners, c._data_w, c._child_w, c._pending = True, False, {}, {}, {}, []
        self._queue = deque(i for i in self._queue if i.client is not c)

    def deliver_one(self, client: FakeKazooClient | None = None) -> bool:
        """Run the oldest pending callback (of `client`); a frozen client's stay queued."""
        for i, item in enumerate(self._queue):
            if (client is None or item.client is client) and not item.client._frozen:
                del self._queue[i]
                self._run(item)
                return True
        return False

    def deliver_listeners(self, client: FakeKazooClient) -> int:
        """Run only the client's queued state-listener callbacks, leaving its watch events queued:
        kazoo runs listeners at once on its connection thread, watch events later on another."""
        items = [i for i in self._queue if i.client is client and i.listener]
        for item in items:
            self._queue.remove(item)
            self._run(item)
        return len(items)

    def deliver(self, client: FakeKazooClient | None = None, max_steps: int = 100_000) -> int:
        n = 0
        while self.deliver_one(client):
            n += 1
            if n >= max_steps:
                raise SimError(f"more than {max_steps} callbacks: a watch/write feedback loop?")
        return n

    def pending_events(self, client: FakeKazooClient | None = None) -> int:
        return sum(1 for i in self._queue if client is None or i.client is client)

    def pending_listeners(self, client: FakeKazooClient) -> int:
        """State-listener callbacks of `client` still queued (kazoo would have run them already)."""
        return sum(1 for i in self._queue if i.client is client and i.listener)

    # ---- fault-free reads for invariant checkers ----------------------------------------------
    def exists(self, path: str) -> bool:
        return path in self._nodes

    def data(self, path: str) -> bytes:
        return self._node(path).data

    def stat(self, path: str) -> ZnodeStat:
        return self._node(path).stat()

    def children(self, path: str) -> list[str]:
        return list(self._node(path).children)

    def paths(self) -> list[str]:
        return sorted(self._nodes)

    def live_sessions(self) -> dict[int, str]:
        """session id -> name of its client."""
        return {sid: s.client.name for sid, s in self._sessions.items()}

    def dump(self) -> str:
        lines = [f"now={self._now}ms zxid={self._zxid}"]
        for path in self.paths():
            n = self._nodes[path]
            lines.append(f"{path} {n.data[:80]!r} v{n.version}" + (f" owner={n.owner:#x}" if n.owner else ""))
        return "\n".join(lines)

    # ---- sessions and delivery ----------------------------------------------------------------
    def _heard(self, s: _Session) -> bool:
        c = s.client
        return c._session is s and c._connected and not c._frozen and not c._crashed

    def _deadline(self, s: _Session) -> int:
        t = s.last_heard + s.timeout_ms
        # ZooKeeper's ExpiryQueue rounds up to the next tick: a silent session lives up to a tick longer
        return (t // self.tick_ms + 1) * self.tick_ms if self.round_expiry_to_tick else t

    def _new_session(self, c: FakeKazooClient) -> _Session:
        self._zxid += 1  # createSession is a transaction with its own zxid
        self._session_seq += 1
        timeout = min(max(c.requested_timeout_ms, self.min_session_timeout_ms), self.max_session_timeout_ms)
        s = _Session((1 << 56) | self._session_seq, self._session_seq.to_bytes(16, "big"), timeout, c, self._now)
        self._sessions[s.id] = s
        return s

    def _kill_session(self, s: _Session) -> None:
        s.alive = False
        del self._sessions[s.id]
        mine = sorted((p for p, n in self._nodes.items() if n.owner == s.id), reverse=True)
        self._write(lambda zxid: [self._remove(p, zxid) for p in mine])  # closeSession is one txn

    def _enqueue(
        self, c: FakeKazooClient, fn: Callable[..., object], args: tuple[Any, ...], listener: bool = False
    ) -> None:
        if not c._crashed:
            self._queue.append(_Item(c, fn, args, listener))

    def _run(self, item: _Item) -> None:
        try:
            if item.fn(*item.args) is True and item.listener:  # kazoo: a listener returning True leaves
                item.client.remove_listener(item.fn)
        except Exception as exc:  # kazoo's threads log and carry on; keep it for the driver to check
            log.warning("callback %r of %s raised %r", item.fn, item.client.name, exc)
            self.callback_errors.append((item.client.name, exc))

    # ---- the data tree ------------------------------------------------------------------------
    def _node(self, path: str) -> _Node:
        _validate(path)
        if (node := self._nodes.get(path)) is None:
            raise NoNodeError(path)
        return node

    def _get(self, path: str) -> tuple[bytes, ZnodeStat]:
        node = self._node(path)
        return node.data, node.stat()

    def _exists(self, path: str) -> ZnodeStat | None:
        _validate(path)
        return node.stat() if (node := self._nodes.get(path)) is not None else None

    def _save(self, path: str) -> None:
        if path not in self._undo:
            n = self._nodes.get(path)
            self._undo[path] = None if n is None else replace(n, children=dict(n.children))

    def _rollback(self) -> None:
        for path, old in self._undo.items():
            if old is None:
                self._nodes.pop(path, None)
            else:
                self._nodes[path] = old
        self._undo, self._triggers = {}, []

    def _write(self, fn: Callable[[int], T]) -> T:
        self._zxid += 1  # ZooKeeper assigns the zxid before validating: failed writes consume one too
        self._undo, self._triggers = {}, []
        try:
            result = fn(self._zxid)
        except ZookeeperError:
            self._rollback()
            raise
        events, self._undo, self._triggers = self._triggers, {}, []
        for etype, path in events:  # watches fire once the whole transaction is in, in op order
            for c in self._clients.values():
                for watcher in c._pop_watchers(etype, path):
                    self._enqueue(c, watcher, (WatchedEvent(etype, KeeperState.CONNECTED, path),))
        return result

    def _create(
        self, path: str, value: bytes, ephemeral: bool, session: _Session, zxid: int, sequence: bool = False
    ) -> str:
        _validate(path)
        parent_path = _parent(path)
        parent = self._node(parent_path)  # ZooKeeper's order: NoNode, NodeExists, NoChildrenForEphemerals
        if sequence:  # ZooKeeper appends the parent's child-version, ten digits: never reused
            path = f"{path}{parent.cversion:010d}"
        if path in self._nodes:
            raise NodeExistsError(path)
        if parent.owner:
            raise NoChildrenForEphemeralsError(parent_path)
        self._save(path)
        self._save(parent_path)
        self._nodes[path] = _Node(value, zxid, self._now, session.id if ephemeral else 0, zxid, self._now, zxid)
        parent.children[path.rsplit("/", 1)[1]] = None
        parent.cversion, parent.pzxid = parent.cversion + 1, zxid
        self._triggers += [(EventType.CREATED, path), (EventType.CHILD, parent_path)]
        return path

    def _remove(self, path: str, zxid: int) -> bool:
        parent_path = _parent(path)
        self._save(path)
        self._save(parent_path)
        del self._nodes[path]
        parent = self._nodes[parent_path]
        del parent.children[path.rsplit("/", 1)[1]]
        parent.cversion, parent.pzxid = parent.cversion + 1, zxid
        self._triggers += [(EventType.DELETED, path), (EventType.CHILD, parent_path)]
        return True

    def _apply(self, op: _Op, session: _Session, zxid: int) -> object:
        if op.kind == "create":
            return self._create(op.path, op.value, op.ephemeral, session, zxid)
        node = self._node(op.path)
        if op.version != -1 and op.version != node.version:
            raise BadVersionError(op.path)
        if op.kind == "check":
            return True
        if op.kind == "delete":
            if op.path == "/":
                raise BadArgumentsError(op.path)
            if node.children:
                raise NotEmptyError(op.path)
            return self._remove(op.path, zxid)
        self._save(op.path)
        node.data, node.version, node.mzxid, node.mtime = op.value, node.version + 1, zxid, self._now
        self._triggers.append((EventType.CHANGED, op.path))
        return node.stat()

    def _multi(self, ops: list[_Op], session: _Session) -> list[object]:
        def run(zxid: int) -> list[object]:
            results: list[object] = []
            for i, op in enumerate(ops):
                try:
                    results.append(self._apply(op, session, zxid))
                except ZookeeperError as exc:
                    self._rollback()
                    # ZooKeeper answers OK for the ops before the culprit (kazoo: RolledBackError) and
                    # RUNTIMEINCONSISTENCY for those after it (kazoo: RuntimeInconsistency)
                    return [RolledBackError() for _ in ops[:i]] + [exc] + [RuntimeInconsistency() for _ in ops[i + 1 :]]
            return results

        return self._write(run)


# Late, re-exported: zkfake (the kazoo-compatible client side) imports this module's names in turn.
from harness.zkfake import FakeKazooClient as FakeKazooClient  # noqa: E402
from harness.zkfake import SimAsync as SimAsync  # noqa: E402
from harness.zkfake import SimHandler as SimHandler  # noqa: E402
from harness.zkfake import SimTransaction as SimTransaction  # noqa: E402
from harness.zkfake import _SimLock as _SimLock  # noqa: E402
