"""BrokerAccess: how a command reaches the brokers (bootstrap servers or a listener under /brokers/ids, and librdkafka settings)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BrokerAccess:
    """How a command reaches the brokers: --bootstrap-server, or the endpoints under /brokers/ids
    of --broker-listener or of the security.protocol in --command-config (PLAINTEXT), with the
    file's librdkafka settings (TLS, SASL) on the connection."""

    bootstrap_override: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold passwords
    listener: str | None = None

    @property
    def security_protocol(self) -> str:
        return self.settings.get("security.protocol", "PLAINTEXT").upper()
