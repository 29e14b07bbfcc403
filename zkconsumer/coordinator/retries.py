"""Repeats rebalance attempts: how many count against rebalance.max.retries, and the wait between two."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.errors import ConsumerRebalanceFailed, describe, is_retriable
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(
    "zkconsumer.coordinator.rebalancer"
)  # the rebalancer's logger: these lines are the rebalancer's


@dataclass
class RebalanceStats:
    succeeded: int = 0
    failed: int = 0
    last_seconds: float = 0.0
    last_error: str | None = None


@dataclass(frozen=True)
class AttemptOutcome:
    """What one rebalance attempt did."""

    done: bool  # False: someone else still owns part of our share; try again
    blocked: tuple[TopicPartition, ...] = ()  # what others still own (done=False)
    claimed: int = 0
    released: int = 0
    kept: int = 0
    waiting_for_brokers: bool = False


def run_attempts(
    attempt_once: Callable[[], AttemptOutcome],
    reason: str,
    *,
    consumer_id: str,
    config: ConsumerConfig,
    listener: ConsumerRebalanceListener,
    stats: RebalanceStats,
    group: GroupZk,
    stopping: threading.Event,
) -> bool:
    """Up to rebalance.max.retries calls of `attempt_once` (Rebalancer.synced_rebalance, which holds
    the rebalance lock meanwhile); True on success (or when `stopping` is set). A failure that is
    not retriable (a bug, a listener's own exception) is raised: the caller takes the member out.

    An attempt that claimed part of our share, or whose wait a blocking owner node's deletion
    cut short, is not counted: the group is moving. Nor is one that waited on owner nodes it
    watches while the run is younger than zkconsumer.rebalance.watched.wait.ms (by default
    rebalance.max.retries session timeouts): their holder is a live member that lets go at its
    own rebalance (we are woken the moment it does), or a dead one whose nodes go when its
    session expires. Without that, members faster than their holders
    (a large group starting at once) used up their retries within seconds and an initial
    rebalance failed. Those waits are bounded by that time; the other free attempts by the size
    of the share, so a run still ends if nodes keep appearing and vanishing in our way."""
    began = time.monotonic()
    attempts = config.rebalance_max_retries
    watch_budget_s = config.rebalance_watched_wait_ms / 1000.0
    attempt = 0
    free_attempts: int | None = None
    while attempt < attempts:
        attempt += 1
        if stopping.is_set():
            return True
        log.info("%s: rebalance attempt %d/%d (%s)", consumer_id, attempt, attempts, reason)
        progress = False
        try:
            outcome = attempt_once()
            if outcome.done:
                stats.succeeded += 1
                stats.last_seconds = time.monotonic() - began
                stats.last_error = None
                return True
            error = "another member still owns some of our partitions"
            blocked = outcome.blocked
            progress = outcome.claimed > 0
            if free_attempts is None:
                free_attempts = outcome.claimed + len(blocked)
        except Exception as exc:  # noqa: BLE001 - classified right here
            if not is_retriable(exc):
                raise
            error = describe(exc)
            blocked = ()
            log.warning("%s: rebalance attempt %d failed: %s", consumer_id, attempt, error)
        stats.last_error = error
        wait = _pause(blocked, config=config, group=group, stopping=stopping)
        if wait == "stopping":
            return True
        if wait == "watching" and not progress and time.monotonic() - began < watch_budget_s:
            attempt -= 1  # bounded by the time budget
        elif (progress or wait == "freed") and free_attempts:
            attempt, free_attempts = attempt - 1, free_attempts - 1
    stats.failed += 1
    failure = ConsumerRebalanceFailed(
        f"{consumer_id} can't rebalance after {attempts} retries ({stats.last_error}); "
        f"retrying with back-off up to {config.rebalance_recheck_ms} ms, never giving up"
    )
    log.error("%s", failure)
    listener.on_rebalance_failed(failure)
    return False


def _pause(
    blocked: tuple[TopicPartition, ...], *, config: ConsumerConfig, group: GroupZk, stopping: threading.Event
) -> str:
    """Wait before the next attempt: "stopping", "freed" (a watched owner node in our way was
    deleted: the last of them, or in incremental mode the first), "watching" (rebalance.backoff.ms
    ran out while every node in our way was watched) or "waited" (it ran out with nothing watched)."""
    backoff_s = config.rebalance_backoff_ms / 1000.0
    free = threading.Event()
    watching = False
    try:
        any_free = config.rebalance_incremental
        if blocked and group.watch_until_free(blocked, free.set, any_free=any_free):
            free.set()
        watching = bool(blocked)
    except Exception as exc:  # noqa: BLE001 - only a shortcut: fall back to the plain back-off
        if not is_retriable(exc):
            raise
    deadline = time.monotonic() + backoff_s
    while not stopping.is_set() and not free.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        free.wait(min(left, 0.05))
    if stopping.is_set():
        return "stopping"
    if free.is_set():
        return "freed"
    return "watching" if watching else "waited"
