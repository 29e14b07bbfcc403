"""How failures leave the ops library: at each public function, kazoo's errors become the package's (AdminUnavailable, ZooKeeperAccessDenied) and a bad value AdminUsageError."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from kazoo.exceptions import KazooException, NoAuthError
from kazoo.handlers.threading import KazooTimeoutError

from zkconsumer.errors import AdminError, AdminUnavailable, AdminUsageError, ZkConsumerError, ZooKeeperAccessDenied

P = ParamSpec("P")
R = TypeVar("R")


def admin_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn`, raising what `translated` makes of a failure that leaves it, the original chained as the cause."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            ours = translated(exc)
            if ours is exc:
                raise
            raise ours from exc

    return wrapper


def translated(exc: Exception) -> Exception:
    """The package's error for a failure leaving a public function: AdminUnavailable where kazoo
    raised (with the line the command line always printed), ZooKeeperAccessDenied for kazoo's
    NoAuthError (as the reads that name their node raise it), AdminUsageError for a plain ValueError
    (a name that is no valid group or topic, mostly). zkconsumer's own errors (a garbled znode's
    ZkDataError among them) and anything else are returned unchanged."""
    if isinstance(exc, ZkConsumerError):
        return exc
    if isinstance(exc, NoAuthError):
        return ZooKeeperAccessDenied(f"ZooKeeper refused access ({type(exc).__name__})")
    if isinstance(exc, (KazooException, KazooTimeoutError)):
        return AdminUnavailable(f"ZooKeeper request failed: {str(exc) or type(exc).__name__}")
    if isinstance(exc, ValueError):
        return AdminUsageError(str(exc))
    return exc


def from_zookeeper(exc: AdminError) -> bool:
    """Whether `exc` is a ZooKeeper failure (raised by admin_errors)."""
    return isinstance(exc, AdminUnavailable) and isinstance(exc.__cause__, (KazooException, KazooTimeoutError))
