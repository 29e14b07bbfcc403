"""A fake kazoo client (FakeKazooClient, SimAsync, SimHandler, SimTransaction) driving a ZkModel."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Generic, TypeVar, cast

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

T = TypeVar("T")


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

    @property
    def negotiated_session_timeout_ms(self) -> int | None:
        """What the last handshake granted (zkconsumer's PollHandler reads it off the wire)."""
        return self._client._granted_ms

    @property
    def handshake_started_at(self) -> float | None:
        """When the last granting handshake was made, in the model's seconds (the members' clock)."""
        at = self._client._handshake_ms
        return None if at is None else at / 1000.0

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

    def create(self, path: str, value: bytes = b"", acl: object = None, ephemeral: bool = False) -> None:
        self._add(_Op("create", path, value, ephemeral=ephemeral))  # ACLs are not modelled

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
        # Named by what it writes: the checks that fence it (our registration, an owner node) are
        # left out, so a claim is "multi" at its first owner node, a commit "multi" at its offset
        # node, and a multi of deletes only (a release) "multi-delete", which fault hooks can aim
        # at without also hitting claims and commits.
        writes = [op for op in ops if op.kind != "check"] or ops
        kind = "multi-delete" if writes and all(op.kind == "delete" for op in writes) else "multi"
        return c._request(kind, writes[0].path if writes else "/", lambda s: c._model._multi(ops, s))

    def commit(self) -> list[object]:
        return self.commit_async().get()

    def __enter__(self) -> SimTransaction:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if not exc_type:
            self.commit()


class FakeKazooClient:
    """The subset of kazoo.client.KazooClient production code uses, against a ZkModel."""

    def __init__(
        self, model: ZkModel, name: str, timeout: float = 10.0, command_retry: dict[str, Any] | None = None
    ) -> None:
        if name in model._clients:
            raise ValueError(f"client {name!r} exists")
        model._clients[name] = self  # registered clients are the ones watch events reach
        self.name, self._model, self.requested_timeout_ms = name, model, int(timeout * 1000)
        self.state: str = KazooState.LOST  # kazoo's state before start()
        self._keeper_state: str = KeeperState.CLOSED
        self._session: _Session | None = None
        self._granted_ms: int | None = None
        self._handshake_ms: int | None = None
        self._connected, self._stopped, self._link, self._frozen, self._crashed = False, True, True, False, False
        self.suspensions = 0  # links dropped so far (each one dropped every watch): drivers read it
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
        """What the last handshake granted; it outlives a disconnection, as the handler's does."""
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
        self.suspensions += 1
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
            # kazoo runs state listeners on its connection thread, before it opens the next session:
            # no one can see the new session id until the LOST listeners have returned.
            self._model.deliver_listeners(self)
        if self._session is None:
            self._session = self._model._new_session(self)
        self._session.last_heard = self._model.now_ms  # the handshake is a ping
        self._granted_ms = self._session.timeout_ms
        self._handshake_ms = self._model.now_ms
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
    def _request(
        self, op: str, path: str, apply: Callable[[_Session], T], arm: Callable[[], None] = lambda: None
    ) -> SimAsync[T]:
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
        self._session.last_heard = max(self._session.last_heard, self._model.now_ms)  # any request is a ping
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

    def create_async(
        self,
        path: str,
        value: bytes = b"",
        ephemeral: bool = False,
        makepath: bool = False,
        acl: object = None,
        sequence: bool = False,
    ) -> SimAsync[str]:
        if not isinstance(value, bytes):
            raise TypeError("Invalid type for 'value' (must be a byte string)")
        m, out = self._model, SimAsync[str](done=False)

        def attempt() -> None:
            apply = partial(m._create, path, value, ephemeral, sequence=sequence)
            self._request("create", path, lambda s: m._write(partial(apply, s))).rawlink(created)

        def created(r: SimAsync[str]) -> None:  # kazoo: on NoNode with makepath, ensure the parent, retry
            if makepath and isinstance(r.exception, NoNodeError):
                self.ensure_path_async(_parent(path)).rawlink(
                    lambda p: attempt() if p.exception is None else out.set_exception(p.exception)
                )
            elif r.exception is not None:
                out.set_exception(r.exception)
            else:
                out.set(r.value)

        attempt()
        return out

    def ensure_path_async(self, path: str, acl: object = None) -> SimAsync[bool | str]:
        """kazoo's algorithm: exists, else ensure the parent and create; True if it was there already."""
        out = SimAsync[bool | str](done=False)

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
        return self._request("exists", path, lambda s: self._model._exists(path), self._arm(self._data_w, path, watch))

    def sync_async(self, path: str) -> SimAsync[str]:
        # one server here: it is always caught up with its leader
        return self._request("sync", path, lambda s: path)

    def get_children_async(self, path: str, watch: Watcher | None = None) -> SimAsync[list[str]]:
        return self._request(
            "get_children",
            path,
            lambda s: list(self._model._node(path).children),
            self._arm(self._child_w, path, watch),
        )

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

    def create(
        self, path: str, value: bytes = b"", ephemeral: bool = False, makepath: bool = False, sequence: bool = False
    ) -> str:
        return self.create_async(path, value, ephemeral, makepath, sequence=sequence).get()

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


from harness.zkmodel import (  # noqa: E402
    Call,
    Fault,
    FaultKind,
    Listener,
    SimBlocked,
    SimError,
    Watcher,  # late: zkmodel imports us
    ZkModel,
    _Op,
    _parent,
    _Session,
)
