"""Log-end offsets of many partitions at once: one ListOffsets per partition leader per refresh through confluent-kafka's AdminClient."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from zkconsumer.partitions import TopicPartition

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

log = logging.getLogger(__name__)
# librdkafka's own lines are swallowed: a failed read is reported once per refresh, by `reason`.
LIBRDKAFKA_LOG = logging.getLogger("zkconsumer.exporter.librdkafka")
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
LIBRDKAFKA_LOG.propagate = False


class LogEnds:
    """The brokers' log-end offsets (ListOffsets, latest) of the partitions asked for.

    A `read` costs one metadata request and one ListOffsets per partition leader, not per
    partition. `reason` says why the last read had no answer for some partitions (None: all
    answered), `missing` how many had none.

    Example::

        with LogEnds("broker1:9092") as ends:
            found = ends.read([("orders", 0), ("orders", 1)])   # {("orders", 0): 1200, ...}
    """

    def __init__(self, bootstrap: str, *, timeout_s: float = 10.0, settings: Mapping[str, str] | None = None) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.settings = dict(settings or {})  # librdkafka connection settings (TLS, SASL): may hold passwords
        self.batches = 0  # list_offsets calls made (one per partition leader per read)
        self.reason: str | None = None
        self.missing = 0  # partitions the last read had no log end for
        self._admin: AdminClient | None = None

    def __enter__(self) -> LogEnds:
        from confluent_kafka.admin import AdminClient

        conf: dict[str, Any] = {
            **self.settings,
            "bootstrap.servers": self.bootstrap,
            "socket.timeout.ms": int(self.timeout_s * 1000),
            "log.connection.close": False,
            "logger": LIBRDKAFKA_LOG,
        }
        self._admin = AdminClient(conf)
        return self

    def __exit__(self, *exc: object) -> None:
        self._admin = None  # the AdminClient has no close: its threads end when it is collected

    def read(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """(topic, partition) -> log end; partitions the brokers did not answer for are left out.

        One metadata request names each partition's leader; a partition without one (offline) or
        unknown to the brokers is not asked at all, and the others are asked one ListOffsets per
        leader, all at once, every answer awaited until one shared deadline (`timeout_s`): an
        offline partition or a dead leader blinds only its own partitions, and a read never takes
        longer than `timeout_s` plus the metadata request."""
        from confluent_kafka import KafkaException

        if self._admin is None:
            raise RuntimeError("LogEnds is used outside its `with` block")
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            self.reason = f"brokers at {self.bootstrap}: {_text(exc)}"
            log.warning("%s", self.reason)
            return {}
        by_leader, failed = leaders_of(wanted, metadata.topics)
        deadline = time.monotonic() + self.timeout_s
        futures: dict[Any, Any] = {}
        for _leader, partitions in sorted(by_leader.items()):
            futures.update(self._ask(partitions, failed))
        out: dict[TopicPartition, int] = {}
        for tp, future in futures.items():
            key = (tp.topic, tp.partition)
            try:
                offset = future.result(timeout=max(0.0, deadline - time.monotonic())).offset
            except KafkaException as exc:
                failed[key] = _text(exc)
                continue
            except concurrent.futures.TimeoutError:  # not yet the builtin TimeoutError on Python 3.10
                failed[key] = f"no answer within {self.timeout_s:g} s"
                continue
            if offset < 0:  # librdkafka's "no offset" (-1, -1001): no log end, never a lag of 0
                failed[key] = f"the broker gave no offset ({offset})"
            else:
                out[key] = offset
        self.missing = len(failed)
        if failed:
            (first, why), more = next(iter(sorted(failed.items()))), len(failed) - 1
            self.reason = f"no log end for {first[0]}-{first[1]}: {why}" + (f" (and {more} more)" if more else "")
            log.warning("%s", self.reason)
        else:
            self.reason = None
        return out

    def _ask(self, partitions: list[TopicPartition], failed: dict[TopicPartition, str]) -> dict[Any, Any]:
        """One ListOffsets (latest) for partitions of one leader: its futures (none if refused at once)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition
        from confluent_kafka.admin import OffsetSpec

        assert self._admin is not None
        self.batches += 1
        try:
            return dict(
                self._admin.list_offsets(
                    {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in partitions},
                    request_timeout=self.timeout_s,
                )
            )
        except KafkaException as exc:
            failed.update(dict.fromkeys(partitions, _text(exc)))
            return {}


def leaders_of(
    wanted: Iterable[TopicPartition], topics: Mapping[str, Any]
) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, str]]:
    """The wanted partitions by leader (broker id), and why the others cannot be asked, from
    librdkafka's metadata (`ClusterMetadata.topics`: name -> TopicMetadata)."""
    by_leader: dict[int, list[TopicPartition]] = {}
    failed: dict[TopicPartition, str] = {}
    for topic, partition in wanted:
        meta = topics.get(topic)
        found = None if meta is None or meta.error is not None else meta.partitions.get(partition)
        if found is None:
            failed[(topic, partition)] = "the brokers' metadata does not list it"
        elif found.leader < 0:
            failed[(topic, partition)] = "it has no leader (offline)"
        else:
            by_leader.setdefault(found.leader, []).append((topic, partition))
    return by_leader, failed


def _text(exc: Exception) -> str:
    first = exc.args[0] if exc.args else exc
    return str(first.str()) if hasattr(first, "str") else str(first)
