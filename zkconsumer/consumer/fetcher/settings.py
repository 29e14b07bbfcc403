"""The legacy fetch properties mapped onto librdkafka's consumer settings (pure)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zkconsumer.config.consumer_config import ConsumerConfig

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the package's name: the fetcher's modules share one logger

# Forced whatever the overrides say: we commit and store offsets ourselves, and we must SEE an
# out-of-range fetch to apply (and log) the legacy auto.offset.reset policy.
_ALWAYS: dict[str, object] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "error",
    "enable.partition.eof": False,
}


@dataclass(frozen=True)
class FetchSettings:
    """The legacy fetch properties, mapped onto librdkafka by `consumer_config()`."""

    bootstrap_servers: str
    group_id: str  # librdkafka needs one even with assign() only; we never subscribe()
    client_id: str
    fetch_message_max_bytes: int = 1048576
    fetch_min_bytes: int = 1
    fetch_wait_max_ms: int = 100
    socket_timeout_ms: int = 30000
    socket_receive_buffer_bytes: int = 65536
    auto_offset_reset: str = "largest"  # "smallest" | "largest": applied by the Fetcher
    queued_max_message_chunks: int = 2
    overrides: Mapping[str, str] = field(default_factory=dict)  # raw librdkafka settings, applied last

    @classmethod
    def from_config(cls, config: ConsumerConfig, bootstrap_servers: str, overrides: Mapping[str, str]) -> FetchSettings:
        """A consumer config's fetch properties (the connector's fetcher, Spark's executor reads)."""
        return cls(
            bootstrap_servers=bootstrap_servers,
            group_id=config.group_id,
            client_id=config.client_id,
            fetch_message_max_bytes=config.fetch_message_max_bytes,
            fetch_min_bytes=config.fetch_min_bytes,
            fetch_wait_max_ms=config.fetch_wait_max_ms,
            socket_timeout_ms=config.socket_timeout_ms,
            socket_receive_buffer_bytes=config.socket_receive_buffer_bytes,
            auto_offset_reset=config.auto_offset_reset,
            queued_max_message_chunks=config.queued_max_message_chunks,
            overrides=overrides,
        )

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in ("smallest", "largest"):
            raise ValueError(f"auto_offset_reset must be smallest or largest, not {self.auto_offset_reset!r}")

    def consumer_config(self) -> dict[str, object]:
        fetch_max = max(52428800, self.fetch_message_max_bytes)
        # whole-consumer prefetch: the legacy chunks x fetch size, >= 4 MB so data waits for us, not we for it
        prefetch_kb = max(4096, self.queued_max_message_chunks * self.fetch_message_max_bytes // 1024)
        conf: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "max.partition.fetch.bytes": self.fetch_message_max_bytes,
            "fetch.max.bytes": fetch_max,
            "receive.message.max.bytes": max(100000000, fetch_max + 512),
            "fetch.min.bytes": max(1, self.fetch_min_bytes),
            "fetch.wait.max.ms": min(self.fetch_wait_max_ms, 300000),
            "socket.timeout.ms": min(max(self.socket_timeout_ms or 300000, 10), 300000),  # legacy 0: none
            "socket.receive.buffer.bytes": max(0, self.socket_receive_buffer_bytes),  # <= 0: OS default
            "queued.max.messages.kbytes": min(prefetch_kb, 2097151),
            "queued.min.messages": 100000,
            "fetch.queue.backoff.ms": 10,  # the 1 s default stalls us once the prefetch bound is hit
        }
        if self.client_id:
            conf["client.id"] = self.client_id
        conf.update(self.overrides)
        for name, value in _ALWAYS.items():
            if name in self.overrides and str(self.overrides[name]).lower() != str(value).lower():
                log.warning(
                    "librdkafka override %s=%s ignored: the fetcher needs %s", name, self.overrides[name], value
                )
            conf[name] = value
        return conf
