"""What GroupZk learns, on any thread, that the member must act on: an owner node not ours any more, a refused fence.

GroupZk does not own partition state or the rebalance thread; it reports here and whoever built the
member subscribes (coordinator/reconcile.py: stop delivering the partition at once and
trigger a rebalance, which alone releases and claims). Callbacks run on the reporting thread
(kazoo's event thread for a watch, the committing thread for a commit) and must not block.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from zkconsumer.partitions import TopicPartition

log = logging.getLogger(__name__)

DoubtListener = Callable[[list[TopicPartition], str], None]
RefusalListener = Callable[[str], None]

__all__ = ["OwnershipSignals"]


class OwnershipSignals:
    """Fan-out of two signals: `doubt(keys, why)` (owner nodes we hold may not be ours any more) and
    `refused(why)` (ZooKeeper refused a write on our session fence).

    Example::

        signals = OwnershipSignals()
        signals.subscribe(doubt=lambda keys, why: ..., refused=lambda why: ...)
        signals.doubt([("orders", 0)], "/consumers/g/owners/orders/0 was deleted")
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._doubt: list[DoubtListener] = []
        self._refused: list[RefusalListener] = []

    def subscribe(self, *, doubt: DoubtListener | None = None, refused: RefusalListener | None = None) -> None:
        with self._lock:
            if doubt is not None:
                self._doubt.append(doubt)
            if refused is not None:
                self._refused.append(refused)

    def doubt(self, keys: list[TopicPartition], why: str) -> None:
        if not keys:
            return
        with self._lock:
            listeners = list(self._doubt)
        for listener in listeners:
            listener(keys, why)

    def refused(self, why: str) -> None:
        with self._lock:
            listeners = list(self._refused)
        for listener in listeners:
            listener(why)
