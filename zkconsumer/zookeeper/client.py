"""Bounded kazoo calls: every ZooKeeper request waits at most a timeout, then raises ZooKeeperUnavailable.

kazoo's synchronous calls wait without limit while the connection is down (the request sits in
kazoo's queue until a reconnect), which would hang a shutdown or a metrics scrape for as long
as ZooKeeper is unreachable. Everything zkconsumer asks ZooKeeper goes through here instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from kazoo.exceptions import AuthFailedError, NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState, WatchedEvent, ZnodeStat

from zkconsumer.errors import ZooKeeperAccessDenied, ZooKeeperUnavailable, ZooKeeperUnreachable
from zkconsumer.zookeeper.auth import ZkAuth
from zkconsumer.zookeeper.deadline import Deadline

if TYPE_CHECKING:
    from kazoo.client import KazooClient

T = TypeVar("T")
Watch = Callable[[WatchedEvent], object]


class ZkIO:
    """A kazoo client whose every call is bounded by `timeout_s` (or by a Deadline's remainder).

    Example::

        io = ZkIO(client, timeout_s=6.0)
        data, stat = io.get("/brokers/ids/1")
        children = io.children("/consumers/g/ids", watch=on_change)
    """

    def __init__(self, client: Any, timeout_s: float, identity: str = "this client") -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.identity = identity  # who we are to ZooKeeper, named when it refuses us
        self.deadline = Deadline(None)  # tightened by shutdown

    def wait(self, async_result: Any, what: str, paths: list[str] | None = None) -> Any:
        """The answer to one request, waiting at most the timeout. NoAuth, also inside a
        transaction's results (`paths` names its operations), raises ZooKeeperAccessDenied."""
        timeout = self.deadline.remaining(self.timeout_s)
        try:
            answer = async_result.get(timeout=timeout)
        except KazooTimeoutError:
            raise ZooKeeperUnavailable(f"no answer from ZooKeeper within {timeout:.1f}s to {what}") from None
        except NoAuthError:
            raise self._denied(what) from None
        except AuthFailedError:  # kazoo reports CONNECTED before a SASL login is refused
            raise ZooKeeperAccessDenied(
                f"ZooKeeper rejected {self.identity}: authentication failed (at {what})"
            ) from None
        if isinstance(answer, list):
            for index, result in enumerate(answer):
                if isinstance(result, NoAuthError):
                    raise self._denied(f"{what} ({paths[index]})" if paths and index < len(paths) else what)
        return answer

    def _denied(self, what: str) -> ZooKeeperAccessDenied:
        return ZooKeeperAccessDenied(
            f"ZooKeeper refused {what} to {self.identity}: NoAuth (the ACL of the node or "
            "its parent does not allow it; check the credentials and zookeeper.set.acl)"
        )

    # kazoo is untyped: each answer is annotated with what its request returns.
    def get(self, path: str, watch: Watch | None = None) -> tuple[bytes, ZnodeStat]:
        answer: tuple[bytes, ZnodeStat] = self.wait(self.client.get_async(path, watch=watch), f"get {path}")
        return answer

    def exists(self, path: str, watch: Watch | None = None) -> ZnodeStat | None:
        stat: ZnodeStat | None = self.wait(self.client.exists_async(path, watch=watch), f"exists {path}")
        return stat

    def exists_after_sync(self, path: str) -> ZnodeStat | None:
        """`exists`, answered only once the server caught up with the leader: a sync, then the read,
        sent together (ZooKeeper answers a session's requests in order, so one round trip). A
        follower that lost its leader cannot answer the sync (it forwards it to the leader), so this
        times out rather than answer from a copy the leader may have moved past."""
        synced = self.client.sync_async(path)
        found = self.client.exists_async(path)
        self.wait(synced, f"sync {path}")
        stat: ZnodeStat | None = self.wait(found, f"exists {path}")
        return stat

    def children(self, path: str, watch: Watch | None = None) -> list[str]:
        names: list[str] = self.wait(self.client.get_children_async(path, watch=watch), f"get_children {path}")
        return names

    def create(self, path: str, data: bytes, *, ephemeral: bool = False, sequence: bool = False) -> str:
        """The path created (with its sequence number appended, if `sequence`)."""
        answer = self.client.create_async(path, data, ephemeral=ephemeral, sequence=sequence)
        created: str = self.wait(answer, f"create {path}")
        return created

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        stat: ZnodeStat = self.wait(self.client.set_async(path, data, version=version), f"set {path}")
        return stat

    def delete(self, path: str, version: int = -1) -> None:
        self.wait(self.client.delete_async(path, version=version), f"delete {path}")

    def ensure_path(self, path: str, acl: list[Any] | None = None) -> None:
        """Create the persistent node and its missing parents, with `acl` (kazoo's ensure_path, bounded)."""
        self.wait(self.client.ensure_path_async(path, acl), f"ensure_path {path}")

    def commit(self, txn: Any, what: str) -> list[Any]:
        chroot = getattr(self.client, "chroot", "") or ""
        paths = [getattr(op, "path", "?") for op in getattr(txn, "operations", [])]
        paths = [p[len(chroot) :] if chroot and p.startswith(chroot + "/") else p for p in paths]  # as elsewhere
        results: list[Any] = self.wait(txn.commit_async(), what, paths)  # per operation: its answer or error
        return results

    def transaction(self) -> Any:
        """A new kazoo transaction, to fill and then hand to `commit`."""
        return self.client.transaction()

    def get_many(
        self, paths: Iterable[tuple[T, str]], what: str, watch: Watch | None = None
    ) -> dict[T, tuple[bytes, ZnodeStat] | None]:
        """key -> (data, stat) of each node, or None for a node that does not exist; all asked at once."""
        return self.many(((key, self.client.get_async(path, watch=watch)) for key, path in paths), what)

    def exists_many(self, paths: Iterable[tuple[T, str]], what: str) -> dict[T, ZnodeStat | None]:
        """key -> the node's stat, or None for a node that does not exist; all asked at once."""
        return self.many(((key, self.client.exists_async(path)) for key, path in paths), what)

    def many(self, calls: Iterable[tuple[T, Any]], what: str) -> dict[T, Any]:
        """Wait for several requests sent at once: key -> result, or None for a node that does not
        exist. Any other failure raises (for the whole batch)."""
        sent = list(calls)  # every request goes out before the first answer is awaited
        out: dict[T, Any] = {}
        for key, async_result in sent:
            try:
                out[key] = self.wait(async_result, what)
            except NoNodeError:
                out[key] = None
        return out


_NO_AUTH = ZkAuth()  # frozen: one shared default


def connect(
    hosts: str,
    *,
    session_timeout_s: float,
    connect_timeout_s: float,
    auth: ZkAuth = _NO_AUTH,
    command_deadline_s: float | None = None,
    default_acl: list[Any] | None = None,
) -> KazooClient:
    """The one ZooKeeper session factory: members, the command line and the Spark planner all get
    their client here. A started KazooClient that keeps reconnecting, on zkconsumer's handler
    (handler.py), which reads the session timeout the server granted off every handshake
    (`negotiated_timeout_ms`). kazoo's connection loop is patched for fewer system calls per
    request only on the kazoo versions that was tested with (internals.py).

    One retry policy: the connection is retried every 0.1-0.5 s until `connect_timeout_s` (here) or,
    once up, for the session's life. Requests are not retried by kazoo for a member, which decides
    itself what a failed request means; a short-lived reader (`command_deadline_s`) lets kazoo retry a
    request lost to a dropped connection three times within that many seconds. `default_acl`: the
    ACL of nodes created without one (the command line's writes on a secured cluster).

    Raises ZooKeeperUnreachable when no server answers within `connect_timeout_s`, and
    ZooKeeperAccessDenied when the servers refuse our credentials."""
    from kazoo.client import KazooClient

    from zkconsumer.zookeeper import internals
    from zkconsumer.zookeeper.handler import make_handler

    auth.prepare_login(hosts)
    retries: dict[str, Any] = {}
    if command_deadline_s is not None:
        retries["command_retry"] = {"max_tries": 3, "delay": 0.1, "max_delay": 1.0, "deadline": command_deadline_s}
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout_s,
        handler=make_handler(hosts),
        # Deliveries wait while the connection is down: after a leader election a reconnect must
        # not wait out a long back-off step (0.2 s doubling to 2 s paused deliveries 1.66-1.91 s
        # where this paused them 0.83-1.30 s, elections of 0.90-1.03 s); at most two tries a second.
        connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 0.5},
        default_acl=default_acl,
        **retries,
        **auth.kazoo_options(),
    )
    internals.install(client)
    # kazoo's start() would wait out the whole timeout after a refused login: watch the state instead.
    started = client.start_async()
    deadline = time.monotonic() + connect_timeout_s
    try:
        while not client.connected and client.client_state != KeeperState.AUTH_FAILED and time.monotonic() < deadline:
            started.wait(0.05)
        if client.client_state == KeeperState.AUTH_FAILED:
            raise ZooKeeperAccessDenied(f"ZooKeeper at {hosts} rejected {auth.identity}: authentication failed")
        if not client.connected:
            raise ZooKeeperUnreachable(f"no ZooKeeper connection within {connect_timeout_s:g} s")
        if negotiated_timeout_ms(client) is None:  # kazoo reports CONNECTED only after reading the handshake
            raise ZooKeeperUnavailable(
                f"connected to ZooKeeper at {hosts}, but the session timeout it granted could not be read "
                "off the handshake (kazoo did not open its socket through the client's handler)"
            )
        if auth.sasl is not None:  # kazoo says CONNECTED before the SASL exchange ends: one request shows it
            try:
                ZkIO(client, connect_timeout_s, f"{auth.identity} at {hosts}").exists("/")
            except ZooKeeperAccessDenied:
                raise ZooKeeperAccessDenied(
                    f"ZooKeeper at {hosts} rejected {auth.identity}: authentication failed"
                ) from None
    except BaseException:
        client.stop()  # kazoo refuses close() while its connection thread still retries
        client.close()
        raise
    return client


def negotiated_timeout_ms(client: Any) -> int | None:
    """The session timeout the server granted in the client's last handshake (it may be lower than
    the one asked for: the server's maxSessionTimeout); None if the client's handler does not read
    it (a client not made by `connect`)."""
    value = getattr(getattr(client, "handler", None), "negotiated_session_timeout_ms", None)
    return value if isinstance(value, int) else None


def handshake_started_at(client: Any) -> float | None:
    """The lease clock (zkconsumer.clock) read before the connection whose handshake last granted
    the client a session was opened (the server renewed the session after it); None if the
    client's handler does not record it (a client not made by `connect`)."""
    value = getattr(getattr(client, "handler", None), "handshake_started_at", None)
    return value if isinstance(value, float) else None


def run_bounded(fn: Callable[[], object], timeout_s: float, name: str) -> bool:
    """Run `fn` on a daemon thread named `name`, waiting at most `timeout_s` (a close on an exit
    path must not hang it); False if it had not finished (it goes on in the background)."""
    import threading

    worker = threading.Thread(target=fn, name=name, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return not worker.is_alive()


def close_quietly(client: Any, timeout_s: float) -> bool:
    """Close the session (our ephemeral nodes vanish at once) without waiting past `timeout_s`;
    False if kazoo did not finish in time (it goes on in the background)."""

    def run() -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # noqa: BLE001 - already disconnected; nothing left to clean
            pass

    return run_bounded(run, timeout_s, "zkconsumer-close-session")
