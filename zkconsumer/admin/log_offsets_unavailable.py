"""LogOffsetsUnavailable: the brokers could not be asked for offsets by time; the message says why."""

from __future__ import annotations

from zkconsumer.errors import ZkConsumerError


class LogOffsetsUnavailable(ZkConsumerError):
    """The brokers could not be asked for offsets by time; the message says why."""
