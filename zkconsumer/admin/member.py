"""Member: one registered consumer of a group, its registration (or why it is unreadable) and its threads per topic."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from zkconsumer.zookeeper.znodes import Registration


@dataclass
class Member:
    """One registered consumer: its registration (or why it is unreadable) and its threads per topic."""

    consumer_id: str
    session: int
    registration: Registration | None
    threads: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def subscription_text(self) -> str:
        if self.registration is None:
            return f"unreadable: {self.error}"
        counts = ",".join(f"{key}:{n}" for key, n in self.registration.subscription)
        return counts if self.registration.pattern == "static" else f"{self.registration.pattern} {counts}"

    def registered_at(self) -> str | None:
        stamp = self.registration.timestamp if self.registration else None
        if stamp is None or not stamp.isdigit():
            return stamp
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(stamp) / 1000))
