"""zkconsumer's exceptions: one root, a `retriable` flag, and the classifier every retry loop asks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from kazoo.exceptions import (
    AuthFailedError,
    BadArgumentsError,
    InvalidACLError,
    KazooException,
    NoAuthError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError


class ZkConsumerError(Exception):
    """Root of every exception zkconsumer raises on purpose.

    `retriable` says whether doing the same thing again later may succeed (ZooKeeper or Kafka
    unreachable, a peer in the way). A non-retriable error is a bug or a setting to fix: retry
    loops give up on it at once.
    """

    retriable: bool = False


class ConsumerError(ZkConsumerError, RuntimeError):
    """A background thread of the connector failed and the member left the group; the cause is chained."""


class ConsumerTimeout(ZkConsumerError):
    """No message within consumer.timeout.ms (or delivery paused that long). Iteration may continue."""

    retriable = True


class ConsumerRebalanceFailed(ZkConsumerError, RuntimeError):
    """Every attempt of one rebalance failed (Scala's ConsumerRebalanceFailedException)."""

    retriable = True


class RegistrationConflict(ZkConsumerError, RuntimeError):
    """Another live ZooKeeper session holds our member node: a duplicate consumer.id (or our previous
    process, which has not timed out yet)."""

    retriable = True


class ZooKeeperUnavailable(ZkConsumerError, ConnectionError):
    """No answer from ZooKeeper in time, or no connection: ownership can be neither proved nor changed."""

    retriable = True


class ZooKeeperUnreachable(ZooKeeperUnavailable):
    """No ZooKeeper server of the connect string answered within the connect timeout (`connect`)."""


class ZooKeeperClosed(ZkConsumerError, ConnectionError):
    """The kazoo client closed for good while the member was running (its connection thread ended):
    no reconnect will come, so the member leaves. Not retriable."""


class ZooKeeperAccessDenied(ZkConsumerError, PermissionError):
    """ZooKeeper refused our credentials (AuthFailed) or a request for want of rights on a node
    (NoAuth); the message names the node and our identity. A setting to fix: never retried."""


class BrokersUnavailable(ZkConsumerError, ConnectionError):
    """No usable Kafka broker (none registered, none with the wanted endpoint, or no connection yet)."""

    retriable = True


class SessionLost(ZkConsumerError):
    """The ZooKeeper session our member registered in has ended; its ephemeral nodes are gone."""

    retriable = True


class CommitFailed(ZkConsumerError):
    """Offsets could not be written (after retries); `partitions` names them."""

    retriable = True

    def __init__(self, message: str, partitions: list[tuple[str, int]] | None = None) -> None:
        super().__init__(message)
        self.partitions = partitions or []


class ShutdownIncomplete(ZkConsumerError):
    """`shutdown(timeout)` ran out of time; `uncommitted` maps partitions to offsets it could not write."""

    def __init__(self, message: str, uncommitted: dict[tuple[str, int], int]) -> None:
        super().__init__(message)
        self.uncommitted = uncommitted

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the two-argument __init__
        return (type(self), (str(self), self.uncommitted))


class ZkDataError(ZkConsumerError, ValueError):
    """A znode held data that a Scala reader would also reject (or that is not UTF-8).

    Retriable: a foreign writer's node may be rewritten or removed, so a later attempt may succeed.
    """

    retriable = True

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the two-argument __init__
        return (type(self), (self.path, self.reason))


# Kazoo errors that no retry can fix: credentials, ACLs, our own bad arguments.
_KAZOO_FINAL = (AuthFailedError, BadArgumentsError, InvalidACLError, NoAuthError, UnimplementedError)


def is_retriable(exc: BaseException) -> bool:
    """Whether a retry may succeed. Anything we do not recognise is a bug and is not retried."""
    if isinstance(exc, ZkConsumerError):
        return exc.retriable
    if isinstance(exc, KazooException):
        return not isinstance(exc, _KAZOO_FINAL)
    if isinstance(exc, KazooTimeoutError):
        return True
    if isinstance(exc, KafkaException):
        err = exc.args[0] if exc.args else None
        # confluent-kafka marks most transient errors (broker down, transport) retriable()==False:
        # only fatal errors are final here. A KafkaException without a KafkaError is not one we know.
        return isinstance(err, KafkaError) and not err.fatal()
    return isinstance(exc, (OSError, TimeoutError))


def describe(exc: BaseException) -> str:
    """`Type: message` (kazoo's ConnectionLoss, for one, has an empty message)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# What a best-effort ZooKeeper step (a marker, a linger's look at the group) may raise and log
# instead of failing: kazoo's errors (NoAuth included), its timeouts, and our own wrappers of them.
ZOOKEEPER_FAILURES: tuple[type[BaseException], ...] = (KazooException, KazooTimeoutError, ZkConsumerError)


# ---------------------------------------------------------------- the ops library (zkconsumer.admin)


class AdminError(ZkConsumerError):
    """An ops-library call (zkconsumer.admin) that could not, or would not, do what it was asked; the
    message is one line that names the group, topic or node.

    The subclasses say which: AdminUsageError (the request itself is wrong), AdminRefused (it would
    not: doing it is unsafe now), AdminUnavailable (it could not: ZooKeeper or the brokers did not
    answer). `bad_request` is True for a usage error only: asking again unchanged fails again, and
    the command line exits 2 for it, 1 otherwise. `details`: one line per offending row, said
    before the message.
    """

    bad_request: bool = False

    def __init__(self, message: str, *, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


class AdminUsageError(AdminError, ValueError):
    """The request cannot be carried out as given (a partition that does not exist, an offset
    outside the log, a name that is no valid group or topic). A ValueError too: a bad value."""

    bad_request = True


class AdminRefused(AdminError):
    """The call would not do it: the group has live members, an owner or a joining member is in
    the way; the message says what to do first."""


class AdminUnavailable(AdminError):
    """The call could not do it: ZooKeeper or the brokers gave no (usable) answer."""


class InputError(AdminUsageError):
    """User-supplied text (a file line, an option value) that cannot be used; the message says where."""


class UnknownGroup(AdminError, LookupError):
    """No /consumers/<group>: the message names the node. Not a usage error: the group may yet appear."""


class DeleteRefused(AdminRefused):
    """A group delete that stopped, or found nothing to delete; the message says why and what was deleted."""


class LogOffsetsUnavailable(AdminUnavailable):
    """The brokers could not be asked for offsets by time; the message says why."""
