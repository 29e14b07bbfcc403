"""The live-switch audit's ownership sampler: every 100 ms, ZooKeeper's owner nodes and the brokers' group (DescribeGroups)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient

from zkconsumer.zookeeper import znodes

if TYPE_CHECKING:
    from harness.switch_run import AuditRun

SAMPLE_PERIOD = 0.1


def clock() -> float:
    """CLOCK_MONOTONIC: the clock harness.switch_member stamps deliveries with."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


@dataclass
class Sample:
    at: float
    zk_owned: frozenset[int]
    broker_state: str
    broker_assigned: frozenset[int]


@dataclass
class OwnershipSampler:
    """Every 100 ms: the owner nodes in ZooKeeper and the brokers' group (DescribeGroups); one thread."""

    run: AuditRun
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._broker_reads = threading.Lock()  # held by a DescribeGroups in flight, or by a pause
        self._zk = self.run.cluster.zk_client()
        self._admin: AdminClient | None = AdminClient({"bootstrap.servers": self.run.cluster.bootstrap_servers})
        self._thread = threading.Thread(target=self._loop, name="switch-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._zk.stop()
        self._zk.close()
        # librdkafka handles are destroyed here, while the brokers still run: a destroy left to the
        # interpreter's exit, after the cluster stopped, can wait on brokers that are gone.
        self._admin = None

    @contextlib.contextmanager
    def broker_reads_paused(self) -> Iterator[None]:
        """No DescribeGroups in flight (one under way is waited for) until the block ends: librdkafka
        2.16 aborts or crashes the process when the connection to the coordinator drops under a
        coordinator request (confluentinc/librdkafka#4605), so the sampler waits out a coordinator's
        kill and restart, leaving a gap in its samples."""
        with self._broker_reads:
            yield

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_PERIOD):
            if not self._broker_reads.acquire(blocking=False):
                continue  # paused
            try:
                self.samples.append(self._sample())
            except Exception:  # noqa: BLE001 - a coordinator moving, ZooKeeper slow: counted, not fatal
                self.errors += 1
            finally:
                self._broker_reads.release()

    def _sample(self) -> Sample:
        at = clock()
        folder = znodes.owners_path(self.run.group, self.run.topic)
        owned = frozenset(int(c) for c in self._zk.get_children(folder)) if self._zk.exists(folder) else frozenset()
        assert self._admin is not None
        # A request left to time out inside librdkafka while it looks up the coordinator aborted the
        # process (librdkafka 2.x: rd_kafka_enq_once_del_source_return: `eonce->refcnt > 0`): give
        # each request the time to answer, and let a slow answer show as a gap between samples.
        future = self._admin.describe_consumer_groups([self.run.group], request_timeout=15.0)[self.run.group]
        group = future.result(timeout=20.0)
        assigned = frozenset(
            tp.partition
            for m in group.members or []
            for tp in (m.assignment.topic_partitions if m.assignment else [])
            if tp.topic == self.run.topic
        )
        return Sample(at, owned, str(group.state).rsplit(".", 1)[-1], assigned)

    def unowned_max(self, start: float, end: float) -> float:
        """The longest a partition went with neither an owner node nor a brokers' assignment, within
        [start, end] (by samples: 0.1 s resolution; a partition still unowned at `end` counts until then)."""
        since: dict[int, float] = {}
        worst = 0.0
        for s in self.samples:
            if not start <= s.at <= end:
                continue
            held = s.zk_owned | s.broker_assigned
            for p in range(self.run.partitions):
                if p in held:
                    if p in since:
                        worst = max(worst, s.at - since.pop(p))
                elif p not in since:
                    since[p] = s.at
        return max([worst, *(end - t for t in since.values())])
