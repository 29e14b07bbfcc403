"""ZkDataError: a znode held data that a Scala reader would also reject (or that is not UTF-8); the message names the node."""

from __future__ import annotations

from typing import Any

from zkconsumer.errors import ZkConsumerError


class ZkDataError(ZkConsumerError, ValueError):
    """A znode held data that a Scala reader would also reject (or that is not UTF-8).

    Retriable: a foreign writer's node may be rewritten or removed, so a later attempt may succeed.
    """

    retriable = True

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the two-argument __init__
        return (type(self), (self.path, self.reason))
