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
    """`fn`, raising AdminUnavailable where kazoo raised and AdminUsageError where a plain ValueError
    left it (a name that is no valid group or topic, mostly), the original chained as the cause.

    The ZooKeeper message is the line the command line always printed for such an error. kazoo's
    NoAuthError becomes ZooKeeperAccessDenied, as the reads that name their node already raise it.
    zkconsumer's own errors (a garbled znode's ZkDataError among them) pass unchanged."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ZkConsumerError:
            raise
        except NoAuthError as exc:
            raise ZooKeeperAccessDenied(f"ZooKeeper refused access ({type(exc).__name__})") from exc
        except (KazooException, KazooTimeoutError) as exc:
            raise AdminUnavailable(f"ZooKeeper request failed: {str(exc) or type(exc).__name__}") from exc
        except ValueError as exc:
            raise AdminUsageError(str(exc)) from exc

    return wrapper


def from_zookeeper(exc: AdminError) -> bool:
    """Whether `exc` is a ZooKeeper failure (raised by admin_errors)."""
    return isinstance(exc, AdminUnavailable) and isinstance(exc.__cause__, (KazooException, KazooTimeoutError))
