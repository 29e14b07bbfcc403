"""Log-end offsets of many partitions at once: one ListOffsets batch per refresh through confluent-kafka's AdminClient."""

from __future__ import annotations

import concurrent.futures
import logging
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

    librdkafka sends one request per partition leader for a whole `read`, so a refresh of every
    group costs as many broker requests as there are leaders, not partitions. `reason` says why
    the last read had no answer for some partitions (None: all answered).

    Example::

        with LogEnds("broker1:9092") as ends:
            found = ends.read([("orders", 0), ("orders", 1)])   # {("orders", 0): 1200, ...}
    """

    def __init__(self, bootstrap: str, *, timeout_s: float = 10.0, settings: Mapping[str, str] | None = None) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.settings = dict(settings or {})  # librdkafka connection settings (TLS, SASL): may hold passwords
        self.batches = 0  # list_offsets calls made (each one request per partition leader)
        self.reason: str | None = None
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
        """(topic, partition) -> log end; partitions the brokers did not answer for are left out."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition
        from confluent_kafka.admin import OffsetSpec

        if self._admin is None:
            raise RuntimeError("LogEnds is used outside its `with` block")
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        self.batches += 1
        try:
            futures: dict[Any, Any] = self._admin.list_offsets(
                {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in wanted},
                request_timeout=self.timeout_s,
            )
        except KafkaException as exc:
            self.reason = f"brokers at {self.bootstrap}: {_text(exc)}"
            return {}
        out: dict[TopicPartition, int] = {}
        failed: dict[TopicPartition, str] = {}
        for tp, future in futures.items():
            key = (tp.topic, tp.partition)
            try:
                out[key] = future.result(timeout=self.timeout_s + 1.0).offset
            except KafkaException as exc:
                failed[key] = _text(exc)
            except concurrent.futures.TimeoutError:  # not yet the builtin TimeoutError on Python 3.10
                failed[key] = f"no answer within {self.timeout_s + 1.0:g} s"
        if failed:
            (first, why), more = next(iter(sorted(failed.items()))), len(failed) - 1
            self.reason = f"no log end for {first[0]}-{first[1]}: {why}" + (f" (and {more} more)" if more else "")
            log.warning("%s", self.reason)
        else:
            self.reason = None
        return out


def _text(exc: Exception) -> str:
    first = exc.args[0] if exc.args else exc
    return str(first.str()) if hasattr(first, "str") else str(first)
