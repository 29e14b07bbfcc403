"""Every command-line option the commands share, in one module (as pip's cmdoptions): ZooKeeper, brokers, writes, output."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from zkconsumer.cli.brokers import broker_access
from zkconsumer.cli.common import _JAAS_FILE, ENV_DIGEST, ENV_JAAS, ENV_ZOOKEEPER, EXIT_USAGE, CliError

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
Q = TypeVar("Q")


def _check_connect(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    hosts, _, chroot = value.partition("/")
    if not hosts or any(not h.strip() for h in hosts.split(",")):
        raise click.BadParameter(f"{value!r}: expected host:port[,host:port...][/chroot]")
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise click.BadParameter(f"{value!r}: bad chroot")
    return value


def _check_digest(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and (":" not in value or value.startswith(":")):
        raise click.BadParameter("expected user:password")
    return value


def zk_options(fn: Callable[..., R]) -> Callable[..., R]:
    """--zookeeper, --zk-digest, --zk-jaas and --zk-timeout, with their environment variables.

    The command gets all but --zk-jaas, which zk_session reads: it takes one parameter fewer."""

    @functools.wraps(fn)
    def command(*args: Any, zk_jaas: str | None, **kwargs: Any) -> R:
        token = _JAAS_FILE.set(zk_jaas)
        try:
            return fn(*args, **kwargs)
        finally:
            _JAAS_FILE.reset(token)

    decorated = click.option(
        "--zk-jaas",
        envvar=ENV_JAAS,
        type=click.Path(exists=True, dir_okay=False),
        metavar="FILE",
        help=f"Log in to ZooKeeper with SASL as the JAAS file's Client section says, as a Scala "
        f"member does; nodes the command creates get the secured ACL (env {ENV_JAAS}).",
    )(command)
    decorated = click.option(
        "--zk-timeout",
        type=click.FloatRange(min=0.1),
        default=10.0,
        show_default=True,
        metavar="SECONDS",
        help="Give up connecting to ZooKeeper after this long.",
    )(decorated)
    decorated = click.option(
        "--zk-digest",
        envvar=ENV_DIGEST,
        callback=_check_digest,
        metavar="USER:PASSWORD",
        help=f"ZooKeeper digest authentication (env {ENV_DIGEST}).",
    )(decorated)
    decorated = click.option(
        "--zookeeper",
        "zookeeper",
        envvar=ENV_ZOOKEEPER,
        required=True,
        callback=_check_connect,
        metavar="HOST:PORT[/CHROOT]",
        help=f"ZooKeeper connect string, as zookeeper.connect (env {ENV_ZOOKEEPER}).",
    )(decorated)
    return decorated


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(fn)


def group_option(fn: F) -> F:
    return click.option("--group", "-g", required=True, metavar="GROUP", help="Consumer group (group.id).")(fn)


def bootstrap_option(fn: Callable[..., R]) -> Callable[..., R]:
    """--bootstrap-server, --command-config and --broker-listener, handed to the command as one
    `brokers` (a BrokerAccess)."""
    return _broker_options(fn, ("--bootstrap-server",))


def bootstrap_servers_option(fn: Callable[..., R]) -> Callable[..., R]:
    """bootstrap_option, its list also given as --bootstrap-servers (`migrate switch`'s spelling)."""
    return _broker_options(fn, ("--bootstrap-servers", "--bootstrap-server"))


def _broker_options(fn: Callable[..., R], names: tuple[str, ...]) -> Callable[..., R]:
    @functools.wraps(fn)
    def command(
        *args: Any, bootstrap_server: str | None, command_config: str | None, broker_listener: str | None, **kwargs: Any
    ) -> R:
        return fn(*args, brokers=broker_access(bootstrap_server, command_config, broker_listener), **kwargs)

    decorated = click.option(
        "--broker-listener",
        metavar="NAME",
        help="Reach brokers through this listener of theirs (default: the first endpoint "
        "speaking the --command-config security.protocol, PLAINTEXT).",
    )(command)
    decorated = click.option(
        "--command-config",
        type=click.Path(exists=True, dir_okay=False),
        metavar="FILE",
        help="librdkafka settings for the broker connections (security.protocol, ssl.*, "
        "sasl.*), one name=value per line.",
    )(decorated)
    return click.option(
        *names,
        "bootstrap_server",
        metavar="HOST:PORT[,...]",
        help="Brokers for log offsets (default: their endpoints under /brokers/ids).",
    )(decorated)


def zookeeper_only_option(fn: F) -> F:
    return click.option(
        "--zookeeper-only",
        is_flag=True,
        help="Do not ask the brokers whether the group also commits offsets to Kafka; write "
        "ZooKeeper only (right only for members with offsets.storage=zookeeper).",
    )(fn)


def execute_options(what: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """--dry-run and --execute (kafka-consumer-groups' pair); the command gets `execute` only.
    `what`: what --execute does ("Write the offsets")."""

    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def command(*args: Any, dry_run: bool, execute: bool, **kwargs: Any) -> R:
            if dry_run and execute:
                raise CliError("--dry-run and --execute contradict each other: give one", EXIT_USAGE)
            return fn(*args, execute=execute, **kwargs)

        decorated = click.option(
            "--execute", is_flag=True, help=f"{what}. Without it only the plan is printed and nothing is written."
        )(command)
        return click.option(
            "--dry-run",
            is_flag=True,
            help="Only print the plan and write nothing: the default, accepted as kafka-consumer-groups takes it.",
        )(decorated)

    return decorate


def clamp_option(fn: F) -> F:
    return click.option(
        "--clamp",
        "clamp_offsets",
        is_flag=True,
        help="Move a new offset that lies outside [log start, log end] to the nearer end (the table says "
        "which), instead of refusing the whole command.",
    )(fn)


def topic_option(fn: F) -> F:
    return click.option(
        "--topic",
        "-t",
        "topics",
        multiple=True,
        metavar="TOPIC",
        help="Only this topic (repeatable). Default: every topic either side has offsets for.",
    )(fn)


def as_request(kind: Callable[..., Q]) -> Callable[[Callable[[Q], R]], Callable[..., R]]:
    """Hand the command its options as one typed request (`kind`, a frozen dataclass whose fields
    are the options' parameter names) instead of one parameter each."""

    def decorate(fn: Callable[[Q], R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def command(**options: Any) -> R:
            return fn(kind(**options))

        return command

    return decorate
