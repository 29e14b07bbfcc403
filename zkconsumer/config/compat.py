"""Which legacy Kafka release's wire quirks to reproduce, derived from one version string."""

from __future__ import annotations

import re
from dataclasses import dataclass

SUPPORTED = ("0.8.2", "0.9", "0.10.0", "0.10.1", "0.10.2", "0.11", "1.0.0", "1.0.1", "1.1")
DEFAULT_VERSION = "1.1"

# Scala's ConsumerConfig defaults for rebalance.max.retries and rebalance.backoff.ms (which falls back
# to zookeeper.sync.time.ms, 2000), by the first release that has them: the same from 0.8.2 to 1.1.1.
_SCALA_REBALANCE_DEFAULTS = {(0, 8, 2): (4, 2000)}


@dataclass(frozen=True)
class Compat:
    """Behaviour switches that differ between legacy consumer releases (docs/design.md, "Release differences").

    Every member of a group must agree on these, so the whole group should use the
    version of its oldest Scala member.
    """

    version: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Compat:
        """Parse "1.1", "0.10.2", "1.0.1"... Raises ValueError naming the accepted values."""
        cleaned = str(text).strip()
        if not re.fullmatch(r"\d+(\.\d+){1,2}", cleaned):
            raise ValueError(f"not a Kafka version: {text!r} (accepted: {', '.join(SUPPORTED)})")
        parts = tuple(int(p) for p in cleaned.split("."))
        if parts < (0, 8, 2) or parts >= (2, 0):
            raise ValueError(
                f"legacy consumer compatibility {text!r} is outside 0.8.2..1.1 (accepted: {', '.join(SUPPORTED)})"
            )
        return cls(parts + (0,) * (3 - len(parts)))

    @property
    def roundrobin_key_format(self) -> str:
        """ "t-p" from 1.0.0 (KAFKA-5822), "[t,p]" before."""
        return "t-p" if self.version >= (1, 0, 0) else "[t,p]"

    @property
    def roundrobin_requires_identical_subscriptions(self) -> bool:
        """Up to 0.10.1 every topic must have the same thread set (KAFKA-2434 lifted it)."""
        return self.version < (0, 10, 2)

    @property
    def internal_topics(self) -> tuple[str, ...]:
        """Topics dropped by wildcard filters when exclude.internal.topics is on."""
        if self.version >= (0, 11, 0):
            return ("__consumer_offsets", "__transaction_state")
        return ("__consumer_offsets",)

    @property
    def scala_retry_budget_s(self) -> float:
        """Seconds from a Scala member's first rebalance attempt to its last with this release's
        defaults: (rebalance.max.retries - 1) x rebalance.backoff.ms (6.0 in 0.8.2..1.1). A Scala
        joiner whose every attempt finds a partition of its share still owned gives up
        (ConsumerRebalanceFailedException) and claims nothing until the next change of /ids."""
        release = max(r for r in _SCALA_REBALANCE_DEFAULTS if r <= self.version)
        retries, backoff_ms = _SCALA_REBALANCE_DEFAULTS[release]
        return (retries - 1) * backoff_ms / 1000.0

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.version)


DEFAULT = Compat.parse(DEFAULT_VERSION)
