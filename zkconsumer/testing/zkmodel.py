"""Deterministic in-memory ZooKeeper ensemble plus a fake kazoo client, for the simulation test tier."""
from __future__ import annotations

import enum
import logging
from collections import deque
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Generic, NamedTuple, TypeVar, Union, cast

from kazoo.exceptions import (BadArgumentsError, BadVersionError, ConnectionClosedError, ConnectionLoss,
                              KazooException, NoChildrenForEphemeralsError, NodeExistsError, NoNodeError,
                              NotEmptyError, RolledBackError, RuntimeInconsistency, SessionExpiredError,
                              ZookeeperError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

log = logging.getLogger(__name__)
T = TypeVar("T")
Watcher = Callable[[WatchedEvent], object]
Listener = Callable[[str], object]


class SimError(RuntimeError):
    """The driver asked for what no real process could do (use a crashed/frozen client, block forever)."""


class SimBlocked(SimError):
    """A retry loop waits for a reconnection, which in the sim only the driver can grant."""


class FaultKind(enum.Enum):
    FAIL_BEFORE = "fail_before"      # ConnectionLoss; the op never reached the server
    FAIL_AFTER = "fail_after"        # the op was applied, its reply lost: ConnectionLoss
    EXPIRE_BEFORE = "expire_before"  # the session expires first (full LOST cycle); SessionExpiredError
    SLOW = "slow"                    # delay_ms of logical time pass before the op is applied


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    drop_link: bool = True  # FAIL_*: kazoo raises ConnectionLoss only when the socket died: stay SUSPENDED
    delay_ms: int = 0       # SLOW only


FAIL_BEFORE, FAIL_AFTER = Fault(FaultKind.FAIL_BEFORE), Fault(FaultKind.FAIL_AFTER)
EXPIRE_BEFORE = Fault(FaultKind.EXPIRE_BEFORE)
FaultHook = Callable[["FakeKazooClient", str, str], Union[Fault, FaultKind, None]]


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
        return ZnodeStat(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
                         self.owner, len(self.data), len(self.children), self.pzxid)


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

    def __init__(self, *, tick_ms: int = 2000, min_session_timeout_ms: int | None = None,
                 max_session_timeout_ms: int | None = None, round_expiry_to_tick: bool = True,
                 queue_while_suspended: bool = True) -> None:
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

    def client(self, name: str, timeout: float = 10.0, command_retry: dict[str, Any] | None = None
               ) -> FakeKazooClient:
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

    def deliver(self, client: FakeKazooClient | None = None, max_steps: int = 100_000) -> int:
        n = 0
        while self.deliver_one(client):
            n += 1
            if n >= max_steps:
                raise SimError(f"more than {max_steps} callbacks: a watch/write feedback loop?")
        return n

    def pending_events(self, client: FakeKazooClient | None = None) -> int:
        return sum(1 for i in self._queue if client is None or i.client is client)

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

    def _enqueue(self, c: FakeKazooClient, fn: Callable[..., object], args: tuple[Any, ...],
                 listener: bool = False) -> None:
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

    def _create(self, path: str, value: bytes, ephemeral: bool, session: _Session, zxid: int) -> str:
        _validate(path)
        parent_path = _parent(path)
        parent = self._node(parent_path)  # ZooKeeper's order: NoNode, NodeExists, NoChildrenForEphemerals
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
                    return ([RolledBackError() for _ in ops[:i]] + [exc]
                            + [RuntimeInconsistency() for _ in ops[i + 1:]])
            return results
        return self._write(run)


class SimAsync(Generic[T]):
    """kazoo's IAsyncResult. Resolved at call time while connected; a request made while SUSPENDED
    stays pending (kazoo queues it) until a reconnect sends it or a LOST/stop fails it."""

    def __init__(self, value: T | None = None, exception: BaseException | None = None, done: bool = True) -> None:
        self.value, self.exception, self._done = value, exception, done
        self._links: list[Callable[[SimAsync[T]], object]] = []

    def set(self, value: T | None = None) -> None:
        self.value, self._done = value, True
        self._fire()

    def set_exception(self, exception: BaseException) -> None:
        self.exception, self._done = exception, True
        self._fire()

    def _fire(self) -> None:
        links, self._links = self._links, []
        for callback in links:
            callback(self)

    def ready(self) -> bool:
        return self._done

    def successful(self) -> bool:
        return self._done and self.exception is None

    def get(self, block: bool = True, timeout: float | None = None) -> T:
        if not self._done:
            if block and timeout is None:  # a real thread would hang here until the driver reconnects
                raise SimBlocked("a call waits for a reconnect; the request stays queued and runs then")
            raise KazooTimeoutError("no answer while the connection is down")  # no logical time passes
        if self.exception is not None:
            raise self.exception
        return self.value  # type: ignore[return-value]  # T may itself be Optional (exists)

    def get_nowait(self) -> T:
        return self.get(block=False)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done

    def rawlink(self, callback: Callable[[SimAsync[T]], object]) -> None:
        if self._done:
            callback(self)
        else:
            self._links.append(callback)

    def unlink(self, callback: Callable[[SimAsync[T]], object]) -> None:
        if callback in self._links:
            self._links.remove(callback)


class _SimLock:
    """A lock that fails loudly where a real one would deadlock the single simulation thread."""

    def __init__(self) -> None:
        self._held = False

    def __enter__(self) -> None:
        if self._held:
            raise SimError("lock re-entered: this would deadlock")
        self._held = True

    def __exit__(self, *exc: object) -> None:
        self._held = False


class SimHandler:
    """What kazoo's DataWatch/ChildrenWatch recipes need of a handler; spawn() queues, never threads."""

    timeout_exception = KazooTimeoutError

    def __init__(self, client: FakeKazooClient) -> None:
        self._client = client

    def lock_object(self) -> _SimLock:
        return _SimLock()

    def async_result(self) -> SimAsync[Any]:
        return SimAsync(done=False)

    def spawn(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        self._client._model._enqueue(self._client, partial(fn, *args, **kwargs), ())

    def sleep_func(self, seconds: float) -> None:
        # No time passes: KazooRetry's jitter is random. A disconnected client would wait for a
        # reconnect only the driver can grant: say so rather than spin forever.
        if not self._client._connected:
            raise SimBlocked(self._client.name)


class SimTransaction:
    """kazoo's TransactionRequest: ops collected, then one atomic multi."""

    def __init__(self, client: FakeKazooClient) -> None:
        self._client, self.operations, self.committed = client, list[_Op](), False

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> None:
        self._add(_Op("create", path, value, ephemeral=ephemeral))

    def check(self, path: str, version: int) -> None:
        self._add(_Op("check", path, version=version))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self._add(_Op("set", path, value, version))

    def delete(self, path: str, version: int = -1) -> None:
        self._add(_Op("delete", path, version=version))

    def _add(self, op: _Op) -> None:
        if not (isinstance(op.path, str) and isinstance(op.value, bytes) and isinstance(op.version, int)):
            raise TypeError(f"bad argument types for {op.kind}")
        self.operations.append(op)

    def commit_async(self) -> SimAsync[list[object]]:
        if self.committed:
            raise ValueError("Transaction already committed")
        self.committed, c, ops = True, self._client, self.operations
        return c._request("multi", ops[0].path if ops else "/", lambda s: c._model._multi(ops, s))

    def commit(self) -> list[object]:
        return self.commit_async().get()

    def __enter__(self) -> SimTransaction:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if not exc_type:
            self.commit()


class FakeKazooClient:
    """The subset of kazoo.client.KazooClient production code uses, against a ZkModel."""

    def __init__(self, model: ZkModel, name: str, timeout: float = 10.0,
                 command_retry: dict[str, Any] | None = None) -> None:
        if name in model._clients:
            raise ValueError(f"client {name!r} exists")
        model._clients[name] = self  # registered clients are the ones watch events reach
        self.name, self._model, self.requested_timeout_ms = name, model, int(timeout * 1000)
        self.state: str = KazooState.LOST  # kazoo's state before start()
        self._keeper_state: str = KeeperState.CLOSED
        self._session: _Session | None = None
        self._granted_ms: int | None = None
        self._connected, self._stopped, self._link, self._frozen, self._crashed = False, True, True, False, False
        self._listeners: dict[Listener, None] = {}
        self._data_w: dict[str, dict[Watcher, None]] = {}  # ordered sets: kazoo's sets, made deterministic
        self._child_w: dict[str, dict[Watcher, None]] = {}
        self._pending: list[tuple[SimAsync[Any], Callable[[_Session], Any], Callable[[], None]]] = []
        self.handler = SimHandler(self)
        # KazooRetry's deadline reads the real clock; the try count alone keeps the sim deterministic
        retry_kw = {"max_tries": None, **(command_retry or {}), "sleep_func": self.handler.sleep_func}
        retry_kw.pop("deadline", None)
        self.retry = KazooRetry(**retry_kw)

    def __repr__(self) -> str:
        return f"<FakeKazooClient {self.name} {self.state}>"

    # ---- connection -----------------------------------------------------------------------------
    @property
    def client_id(self) -> tuple[int, bytes] | None:
        s = self._session
        return (s.id, s.passwd) if self._connected and s is not None else None

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def client_state(self) -> str:
        return self._keeper_state

    @property
    def negotiated_session_timeout_ms(self) -> int | None:
        """What the last handshake granted; it outlives a disconnection, like zkio.connect's attribute."""
        return self._granted_ms

    def add_listener(self, listener: Listener) -> None:
        self._listeners[listener] = None

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.pop(listener, None)

    def start(self, timeout: float = 15) -> None:
        if self._crashed:
            raise SimError(f"{self.name} has crashed")
        if not self._connected:
            if not self._link:
                raise KazooTimeoutError("Connection time-out")
            self._stopped = False
            self._connect()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._connected and self._session is not None:
            self._model._kill_session(self._session)  # closeSession cannot get through a partition
        self._connected, self._session = False, None
        self._lose(KeeperState.CLOSED, ConnectionLoss())

    def close(self) -> None:
        pass

    def _set_state(self, state: str) -> None:
        if self.state != state:
            self.state = state
            for fn in list(self._listeners):
                self._model._enqueue(self, fn, (state,), listener=True)

    def _reset_watchers(self, keeper_state: str) -> None:
        # kazoo drops every watcher on any connection loss, firing each with a NONE event, and never
        # re-registers them after reconnecting (it sends no SetWatches)
        fns = [f for d in (*self._child_w.values(), *self._data_w.values()) for f in d]
        self._child_w, self._data_w = {}, {}
        for fn in fns:
            self._model._enqueue(self, fn, (WatchedEvent(EventType.NONE, keeper_state, None),))

    def _suspend(self) -> None:
        self._connected, self._keeper_state = False, KeeperState.CONNECTING
        self._set_state(KazooState.SUSPENDED)
        self._reset_watchers(KeeperState.CONNECTING)

    def _lose(self, keeper_state: str, fail_pending: BaseException) -> None:
        self._keeper_state = keeper_state
        self._set_state(KazooState.LOST)
        self._flush(fail_pending)
        self._reset_watchers(keeper_state)

    def _connect(self) -> None:
        if self._session is not None and not self._session.alive:
            self._lose(KeeperState.EXPIRED_SESSION, SessionExpiredError())  # learnt in the handshake
            self._session = None
        if self._session is None:
            self._session = self._model._new_session(self)
        self._granted_ms = self._session.timeout_ms
        self._connected, self._keeper_state = True, KeeperState.CONNECTED
        self._set_state(KazooState.CONNECTED)
        self._flush(None)  # kazoo sends what was queued while SUSPENDED, in order

    def _flush(self, failure: BaseException | None) -> None:
        while self._pending:
            result, apply, arm = self._pending.pop(0)
            if failure is None:
                self._send(result, apply, arm)
            else:
                result.set_exception(failure)

    def _pop_watchers(self, etype: str, path: str) -> list[Watcher]:
        out: list[Watcher] = []
        if etype in (EventType.CREATED, EventType.CHANGED, EventType.DELETED):
            out += self._data_w.pop(path, {})
        if etype in (EventType.CHILD, EventType.DELETED):
            out += self._child_w.pop(path, {})
        return out

    # ---- requests -------------------------------------------------------------------------------
    def _request(self, op: str, path: str, apply: Callable[[_Session], T],
                 arm: Callable[[], None] = lambda: None) -> SimAsync[T]:
        """One request: counted, maybe faulted, applied now (connected) or queued (SUSPENDED)."""
        m = self._model
        m.calls.append(Call(self.name, op, path))
        if self._crashed or self._frozen:
            raise SimError(f"{self.name} is {'crashed' if self._crashed else 'frozen'} and cannot call {op}")
        if self._keeper_state == KeeperState.CLOSED:
            return SimAsync(exception=ConnectionClosedError("Connection has been closed"))
        result: SimAsync[T] = SimAsync(done=False)
        if not self._connected or self._session is None:
            if not m.queue_while_suspended:
                return SimAsync(exception=ConnectionLoss())
            self._pending.append((result, apply, arm))
            return result
        fault = m._hook(self, op, path) if m._hook else None
        fault = Fault(fault) if isinstance(fault, FaultKind) else fault
        if fault is None or fault.kind is FaultKind.SLOW:
            if fault is not None:
                m.advance(fault.delay_ms)
            self._send(result, apply, arm)
        elif fault.kind is FaultKind.EXPIRE_BEFORE:
            m.expire(self)
            result.set_exception(SessionExpiredError())
        else:
            if fault.kind is FaultKind.FAIL_AFTER:
                self._send(SimAsync(done=False), apply, lambda: None)  # applied; the reply is lost
            if fault.drop_link:
                m.disconnect(self)
            result.set_exception(ConnectionLoss())
        return result

    def _send(self, result: SimAsync[T], apply: Callable[[_Session], T], arm: Callable[[], None]) -> None:
        assert self._session is not None
        try:
            value = apply(self._session)
        except ZookeeperError as exc:
            result.set_exception(exc)
            return
        arm()  # kazoo arms a watcher only once a successful reply arrived
        result.set(value)

    def _arm(self, table: dict[str, dict[Watcher, None]], path: str, fn: Watcher | None) -> Callable[[], None]:
        def arm() -> None:
            if fn is not None:
                table.setdefault(path, {})[fn] = None
        return arm

    def create_async(self, path: str, value: bytes = b"", ephemeral: bool = False,
                     makepath: bool = False) -> SimAsync[str]:
        if not isinstance(value, bytes):
            raise TypeError("Invalid type for 'value' (must be a byte string)")
        m, out = self._model, SimAsync[str](done=False)

        def attempt() -> None:
            apply = partial(m._create, path, value, ephemeral)
            self._request("create", path, lambda s: m._write(partial(apply, s))).rawlink(created)

        def created(r: SimAsync[str]) -> None:  # kazoo: on NoNode with makepath, ensure the parent, retry
            if makepath and isinstance(r.exception, NoNodeError):
                self.ensure_path_async(_parent(path)).rawlink(
                    lambda p: attempt() if p.exception is None else out.set_exception(p.exception))
            elif r.exception is not None:
                out.set_exception(r.exception)
            else:
                out.set(r.value)
        attempt()
        return out

    def ensure_path_async(self, path: str) -> SimAsync[bool | str]:
        """kazoo's algorithm: exists, else ensure the parent and create; True if it was there already."""
        out = SimAsync[Union[bool, str]](done=False)

        def checked(r: SimAsync[ZnodeStat | None]) -> None:
            if r.exception is not None:
                out.set_exception(r.exception)
            elif r.value is not None:
                out.set(True)
            else:
                self.ensure_path_async(_parent(path)).rawlink(parent_ready)

        def parent_ready(r: SimAsync[bool | str]) -> None:
            if r.exception is not None:
                out.set_exception(r.exception)
            else:
                self.create_async(path).rawlink(created)

        def created(r: SimAsync[str]) -> None:
            if r.exception is None or isinstance(r.exception, NodeExistsError):
                out.set(True if r.exception else r.value)
            else:
                out.set_exception(r.exception)
        self.exists_async(path).rawlink(checked)
        return out

    def get_async(self, path: str, watch: Watcher | None = None) -> SimAsync[tuple[bytes, ZnodeStat]]:
        return self._request("get", path, lambda s: self._model._get(path), self._arm(self._data_w, path, watch))

    def exists_async(self, path: str, watch: Watcher | None = None) -> SimAsync[ZnodeStat | None]:
        # on a missing node the watch is a creation watch
        return self._request("exists", path, lambda s: self._model._exists(path),
                             self._arm(self._data_w, path, watch))

    def get_children_async(self, path: str, watch: Watcher | None = None) -> SimAsync[list[str]]:
        return self._request("get_children", path, lambda s: list(self._model._node(path).children),
                             self._arm(self._child_w, path, watch))

    def set_async(self, path: str, value: bytes, version: int = -1) -> SimAsync[ZnodeStat]:
        if not isinstance(value, bytes):
            raise TypeError("Invalid type for 'value' (must be a byte string)")
        m = self._model
        op = _Op("set", path, value, version)
        return self._request("set", path, lambda s: cast(ZnodeStat, m._write(partial(m._apply, op, s))))

    def delete_async(self, path: str, version: int = -1) -> SimAsync[bool]:
        m = self._model
        op = _Op("delete", path, version=version)
        return self._request("delete", path, lambda s: bool(m._write(partial(m._apply, op, s))))

    def transaction(self) -> SimTransaction:
        return SimTransaction(self)

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        return self.create_async(path, value, ephemeral, makepath).get()

    def ensure_path(self, path: str) -> bool | str:
        return self.ensure_path_async(path).get()

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, ZnodeStat]:
        return self.get_async(path, watch).get()

    def exists(self, path: str, watch: Watcher | None = None) -> ZnodeStat | None:
        return self.exists_async(path, watch).get()

    def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        return self.get_children_async(path, watch).get()

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        return self.set_async(path, value, version).get()

    def delete(self, path: str, version: int = -1) -> bool:
        return self.delete_async(path, version).get()
