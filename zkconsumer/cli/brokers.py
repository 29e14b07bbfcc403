"""The command line's way to the brokers: zkconsumer.admin's, with one-line warnings on stderr."""

from __future__ import annotations

from kazoo.client import KazooClient

from zkconsumer import admin
from zkconsumer.admin import BrokerAccess, Watermarks
from zkconsumer.cli.common import EXIT_USAGE, CliError, warn
from zkconsumer.config.checks import SECURITY_PROTOCOLS
from zkconsumer.config.properties import parse_properties

_PLAINTEXT = BrokerAccess()  # PLAINTEXT endpoints, no settings


def bootstrap_from_zookeeper(client: KazooClient, access: BrokerAccess = _PLAINTEXT) -> str | None:
    """admin.bootstrap_from_zookeeper, warning on stderr."""
    return admin.bootstrap_from_zookeeper(client, access, warn=warn)


def open_watermarks(client: KazooClient, access: BrokerAccess, *, quiet: bool = False) -> Watermarks:
    """admin.open_watermarks, warning on stderr."""
    return admin.open_watermarks(client, access, quiet=quiet, warn=warn)


def broker_access(bootstrap: str | None, command_config: str | None, listener: str | None) -> BrokerAccess:
    """Read --command-config (a .properties file of librdkafka settings) into a BrokerAccess."""
    settings: dict[str, str] = {}
    if command_config is not None:
        try:
            with open(command_config, encoding="iso-8859-1") as handle:
                settings = {k: v.strip() for k, v in parse_properties(handle.read()).items()}
        except OSError as exc:
            raise CliError(f"--command-config {command_config}: {exc}", EXIT_USAGE) from None
        except ValueError:  # its message quotes the value, which may be a password
            raise CliError(
                f"--command-config {command_config}: not a .properties file (a malformed "
                "\\u escape or line continuation?)",
                EXIT_USAGE,
            ) from None
        protocol = settings.get("security.protocol", "PLAINTEXT")
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise CliError(
                f"--command-config {command_config}: security.protocol={protocol} is not one of "
                + " | ".join(SECURITY_PROTOCOLS),
                EXIT_USAGE,
            )
    return BrokerAccess(bootstrap, settings, listener or None)
