"""What every command shares: exit statuses, CliError (an expected failure as one line), the ZooKeeper session and group check, JSON output."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import click
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from zkconsumer.admin import AdminError, AdminUsageError, LogOffsetsUnavailable, group_exists
from zkconsumer.admin.error_boundary import translated
from zkconsumer.errors import (
    ZkConsumerError,
    ZkDataError,
    ZooKeeperAccessDenied,
    ZooKeeperUnavailable,
    ZooKeeperUnreachable,
)
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.auth import JaasError, ZkAuth, zk_auth
from zkconsumer.zookeeper.client import close_quietly, connect
from zkconsumer.zookeeper.reads import exists, get_children_strict

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2
ENV_ZOOKEEPER = "ZKCONSUMER_ZOOKEEPER"
ENV_DIGEST = "ZKCONSUMER_ZK_DIGEST"
ENV_JAAS = "ZKCONSUMER_ZK_JAAS"
BROKERS = "/brokers"  # what every Kafka cluster's chroot holds
# The --zk-jaas file of the command being run (set by zk_options' wrapper, read by zk_session).
_JAAS_FILE: contextvars.ContextVar[str | None] = contextvars.ContextVar("zk_jaas", default=None)


class CliError(ZkConsumerError, click.ClickException):
    """An expected failure: printed as one line on stderr, no traceback."""

    exit_code = EXIT_PROBLEM

    def __init__(self, message: str, exit_code: int = EXIT_PROBLEM) -> None:
        super().__init__(" ".join(message.split("\n")))  # one line, always
        # click types exit_code a ClassVar, but reads it from the exception it catches: ours is per error.
        self.exit_code = exit_code  # type: ignore[misc]

    def show(self, file: Any = None) -> None:
        click.echo(f"zkconsumer: error: {self.format_message()}", err=True)


def warn(message: str) -> None:
    """A one-line warning on stderr (never on stdout, which may be parsed)."""
    click.echo(f"zkconsumer: warning: {message}", err=True)


def expected_error_message(exc: BaseException) -> str | None:
    """The one line for a failure an operator can cause (ZooKeeper down, no permission, garbled
    znodes, an unreadable file, a Kafka error); None for anything else (a bug)."""
    if isinstance(exc, CliError):
        return exc.format_message()
    if isinstance(exc, (LogOffsetsUnavailable, AdminError)):
        return str(exc)
    if isinstance(exc, ZooKeeperAccessDenied) and "NoAuth" in str(exc):
        return f"{exc}; pass --zk-jaas FILE (SASL, as the group's Scala members log in) or --zk-digest user:password"
    if isinstance(exc, (KazooTimeoutError, KazooException)):  # NoAuthError too: worded as the library raises it
        return expected_error_message(translated(exc))
    if isinstance(exc, ZkDataError):
        return f"unreadable znode {exc}"
    if isinstance(exc, OSError):  # a file that cannot be opened or written, mostly
        return str(exc)
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException):
        error = exc.args[0] if exc.args else exc
        return f"Kafka error: {error.str() if hasattr(error, 'str') else error}"
    return None


def expected_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn failures an operator can cause into CliError (see expected_error_message)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CliError:
            raise
        except AdminError as exc:
            raise cli_error(exc) from None
        except Exception as exc:
            message = expected_error_message(exc)
            if message is None:
                raise
            raise CliError(message) from None

    return wrapper


def cli_error(exc: AdminError) -> CliError:
    """The command line's form of an ops-library error: its rows on stderr first, then the one line
    (exit 2 for a request that cannot be carried out as given, 1 otherwise)."""
    for line in exc.details:
        click.echo(f"zkconsumer: error: {line}", err=True)
    return CliError(str(exc), EXIT_USAGE if exc.bad_request else EXIT_PROBLEM)


# ---------------------------------------------------------------- ZooKeeper


@contextlib.contextmanager
def zk_session(zookeeper: str, digest: str | None, timeout: float) -> Iterator[KazooClient]:
    """A started kazoo client with bounded command retries; CliError if unreachable within `timeout`.
    With --zk-jaas it logs in with SASL, and nodes it creates get a secured Scala member's ACL.

    A chroot without /brokers is refused (exit 2) before anything is read or written: it is no
    Kafka cluster's, so a write or a joining member there would create nodes that no broker or
    member of the real cluster ever sees."""
    auth = _auth(digest, _JAAS_FILE.get())
    try:
        client = connect(
            zookeeper,
            session_timeout_s=max(timeout, 4.0),
            connect_timeout_s=timeout,
            auth=auth,
            command_deadline_s=timeout,
            default_acl=auth.node_acl(),
        )
    except ZooKeeperAccessDenied as exc:
        raise CliError(str(exc)) from None
    except (KazooException, ZooKeeperUnavailable, OSError) as exc:
        detail = "" if isinstance(exc, ZooKeeperUnreachable) else f" ({exc})"
        raise CliError(f"ZooKeeper unreachable at {zookeeper} after {timeout:g} s{detail}") from None
    try:
        require_brokers(client, zookeeper)
        yield client
    finally:
        _close(client)


def require_brokers(client: KazooClient, zookeeper: str) -> None:
    """CliError (exit 2) unless the chroot holds /brokers; names a child of it that has one."""
    if exists(client, BROKERS) is not None:
        return
    hosts, _, chroot = zookeeper.partition("/")
    where = f"/{chroot}" if chroot else "the root"
    hint = ""
    try:
        for child in sorted(get_children_strict(client, "/"))[:50]:
            if child != "zookeeper" and exists(client, f"/{child}{BROKERS}") is not None:
                found = f"/{chroot}/{child}" if chroot else f"/{child}"
                hint = f" ({found}{BROKERS} exists: --zookeeper {hosts}{found})"
                break
    except NoNodeError:
        hint = f" (/{chroot} does not exist)"
    raise CliError(
        f"no {BROKERS} under {where} in ZooKeeper at {hosts}: wrong chroot? Give the chroot of the "
        f"brokers' zookeeper.connect{hint}. Nothing was written.",
        EXIT_USAGE,
    )


def session_identity(digest: str | None) -> str:
    """Who this command is to ZooKeeper (`digest:ops`, `sasl:...`, an unauthenticated client), for errors."""
    return _auth(digest, _JAAS_FILE.get()).identity


def _auth(digest: str | None, jaas_file: str | None) -> ZkAuth:
    text = None
    if jaas_file is not None:
        try:
            with open(jaas_file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise CliError(f"--zk-jaas {jaas_file}: {exc}", EXIT_USAGE) from None
    try:
        return zk_auth(
            digest=digest,
            jaas_inline=None,
            jaas_file_text=text,
            jaas_file=jaas_file,
            section="Client",
            sasl_client=True,
            set_acl=None,
        )
    except JaasError as exc:
        raise CliError(f"--zk-jaas {jaas_file}: {exc}", EXIT_USAGE) from None


def _close(client: KazooClient) -> None:
    # Bounded: after a Ctrl-C that landed inside a kazoo call, stop() could wait without end, and
    # `zkconsumer top` then did not exit (seen once in a full test run).
    if not close_quietly(client, 10.0):
        logging.getLogger(__name__).debug("closing the ZooKeeper client did not finish within 10 s")


def require_group(client: KazooClient, group: str, zookeeper: str) -> None:
    """CliError naming the group unless /consumers/<group> exists (zk_session already refused a wrong chroot)."""
    try:
        known = group_exists(client, group)
    except AdminUsageError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if not known:
        raise CliError(f"unknown group {group!r}: no {znodes.group_path(group)} in ZooKeeper at {zookeeper}")


# ---------------------------------------------------------------- output


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=None, sort_keys=False, default=str))
