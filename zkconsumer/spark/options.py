"""Parse the `zkconsumer` data source options: source settings apart, legacy consumer properties as-is."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetch_settings import FetchSettings
from zkconsumer.coordinator.subscription import Blacklist, TopicFilter, Whitelist, validate_topic
from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.offsets import EARLIEST, decode_offsets

# Spark hands options over lower-cased (CaseInsensitiveDict): compare in lower case.
SOURCE_OPTIONS = frozenset(
    {
        "topics",
        "whitelist",
        "blacklist",
        "streams",
        "startingoffsets",
        "endingoffsets",
        "ignorecommittedoffsets",
        "maxoffsetspertrigger",
        "failondataloss",
        "minpartitions",
        "batchsize",
        "polltimeoutms",
        "bootstrap.servers",
        "path",
        "partitions",
        "checkpointlocation",
        "rowspertask",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
    }
)
MAX_BATCH_SIZE = 1_000_000  # Consumer.consume() refuses more messages per call
# librdkafka settings the executor reader depends on (bounded reads, no broker-side commits).
READER_FORCED: dict[str, object] = {
    "enable.partition.eof": True,
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "error",
}
# librdkafka.* settings the driver's admin client needs as well (TLS, SASL, addressing).
_CONNECTION_SETTINGS = (
    "security.",
    "sasl.",
    "ssl.",
    "enable.ssl",
    "client.",
    "socket.",
    "broker.",
    "metadata.",
    "api.version",
    "resolve.",
)


class OptionError(ZkConsumerError, ValueError):
    """A data source option is missing or invalid; the message names it."""


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"option {key!r} must be true or false, not {raw!r}")
    return text == "true"


def _int(options: Mapping[str, str], key: str, default: int | None, minimum: int) -> int | None:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option {key!r} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {key!r} must be >= {minimum}, not {value}")
    return value


def _position_spec(raw: str | None, key: str, default: str) -> tuple[str, dict[tuple[str, int], int]]:
    """earliest | latest | JSON {"topic/partition": offset} -> (fallback, explicit offsets)."""
    text = (raw if raw is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower(), {}
    try:
        doc = json.loads(text)
        explicit = decode_offsets(doc) if isinstance(doc, dict) else None
    except (ValueError, TypeError):
        explicit = None
    if explicit is None or any(v < EARLIEST for v in explicit.values()):
        raise OptionError(
            f"option {key!r} must be earliest, latest or a JSON object like "
            f'{{"topic/0": 42}} (-2 earliest, -1 latest), not {text!r}'
        )
    return default, explicit


@dataclass(frozen=True)
class SourceOptions:
    """Everything the driver and the executors need, built once from the (string) options."""

    consumer_props: dict[str, str]  # legacy properties for the ConsumerConnector
    topics: tuple[str, ...] = ()
    topic_filter: TopicFilter | None = None
    streams: int = 1
    starting: str = "latest"  # earliest | latest: partitions without another start
    starting_explicit: dict[tuple[str, int], int] = field(default_factory=dict)
    ending: str = "latest"
    ending_explicit: dict[tuple[str, int], int] = field(default_factory=dict)
    ignore_committed: bool = False
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    batch_size: int = 20000
    poll_timeout_ms: int = 120000
    bootstrap_override: str | None = None
    partitions: frozenset[tuple[str, int]] | None = None  # batch: read exactly these, no others
    checkpoint_location: str | None = None  # stream: the query's checkpoint, read for the last completed batch
    rows_per_task: int = 20000  # ranges packed into tasks of about this many rows; 0: a task per range
    fetch_offset_attempts: int = 3  # fetchOffset.numRetries: log-offset lookups tried this often (Spark's count)
    fetch_offset_interval_ms: int = 1000  # fetchOffset.retryIntervalMs: the wait between those attempts

    @cached_property
    def config(self) -> ConsumerConfig:
        return ConsumerConfig.from_mapping(self.consumer_props)

    @property
    def group_id(self) -> str:
        return self.consumer_props["group.id"]

    @property
    def zookeeper_connect(self) -> str:
        return self.consumer_props["zookeeper.connect"]

    def wants(self, topic: str) -> bool:
        """Is this topic part of the subscription (static list or filter)?"""
        if self.topic_filter is None:
            return topic in self.topics
        cfg = self.config
        return self.topic_filter.is_topic_allowed(
            topic, exclude_internal=cfg.exclude_internal_topics, internal_topics=cfg.compat.internal_topics
        )

    def reader_config(self) -> dict[str, object]:
        """librdkafka settings for executor reads: the legacy fetch properties mapped as the fetcher
        maps them (FetchSettings), bootstrap filled in per task."""
        cfg = self.config
        settings = FetchSettings.from_config(cfg, "", cfg.librdkafka_overrides)
        conf = settings.consumer_config()
        conf.update(READER_FORCED)
        return conf

    def client_security(self) -> dict[str, str]:
        """The librdkafka.* connection settings (TLS, SASL, ...) the driver's admin client needs too."""
        return {k: v for k, v in self.config.librdkafka_overrides.items() if k.startswith(_CONNECTION_SETTINGS)}

    def isolation_committed(self) -> bool:
        """Plan ends the way executors read (librdkafka's default isolation is read_committed)."""
        return self.config.librdkafka_overrides.get("isolation.level", "read_committed") != "read_uncommitted"


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the options of one DataFrame; raises OptionError/ConfigError with the culprit named."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    if "reuseconsumers" in opts:
        raise OptionError(
            "option 'reuseConsumers' is gone: pooled consumers measured slower than new ones; a task now "
            "reads all its partitions through one consumer (see 'rowsPerTask'). Remove the option"
        )
    batch_size = _int(opts, "batchsize", 20000, 1) or 20000
    if batch_size > MAX_BATCH_SIZE:
        raise OptionError(f"option 'batchSize' must be <= {MAX_BATCH_SIZE:,} (confluent-kafka's consume() limit)")
    consumer = {k: v for k, v in opts.items() if k not in SOURCE_OPTIONS}
    for required in ("zookeeper.connect", "group.id"):
        if required not in consumer:
            raise OptionError(f"option {required!r} is required")
    config = ConsumerConfig.from_mapping(consumer)  # validates every legacy property now, on the driver
    if config.offsets_storage == "kafka":
        # Reads start at ZooKeeper offsets and commits go there: a group that keeps its offsets in
        # Kafka would be read from stale positions, and its members would not see our commits.
        raise OptionError(
            "offsets.storage=kafka: the zkconsumer source reads and commits the group's ZooKeeper "
            "offsets only; use Spark's kafka source for a group that keeps its offsets in Kafka"
        )
    chosen = [k for k in ("topics", "whitelist", "blacklist") if opts.get(k, "").strip()]
    if len(chosen) != 1:
        raise OptionError(
            "give exactly one of the options 'topics' (comma-separated), 'whitelist' or "
            f"'blacklist' (a regex); got {chosen or 'none'}"
        )
    topics: tuple[str, ...] = ()
    topic_filter: TopicFilter | None = None
    if chosen[0] == "topics":
        try:
            topics = tuple(dict.fromkeys(validate_topic(t.strip()) for t in opts["topics"].split(",") if t.strip()))
        except ValueError as exc:
            raise OptionError(f"option 'topics': {exc}") from None
    else:
        try:
            topic_filter = (Whitelist if chosen[0] == "whitelist" else Blacklist)(opts[chosen[0]])
        except ValueError as exc:
            raise OptionError(f"option {chosen[0]!r}: {exc}") from None
    # Streams default to the legacy auto.offset.reset (largest -> latest); batch reads to earliest.
    default_start = ("earliest" if config.auto_offset_reset == "smallest" else "latest") if streaming else "earliest"
    starting, starting_explicit = _position_spec(opts.get("startingoffsets"), "startingOffsets", default_start)
    ending, ending_explicit = _position_spec(opts.get("endingoffsets"), "endingOffsets", "latest")
    if streaming and "endingoffsets" in opts:
        raise OptionError("option 'endingOffsets' applies to batch reads (spark.read) only")
    if ending == "earliest" and not ending_explicit:
        raise OptionError("option 'endingOffsets' must be latest or a JSON object")
    if not streaming and "maxoffsetspertrigger" in opts:
        raise OptionError("option 'maxOffsetsPerTrigger' applies to streaming reads only")
    partitions = _partitions(opts.get("partitions"), streaming)
    checkpoint = opts.get("checkpointlocation", "").strip() or None
    if checkpoint is not None and not streaming:
        raise OptionError("option 'checkpointLocation' applies to streaming reads only (the query's checkpoint)")
    return SourceOptions(
        consumer_props=consumer,
        topics=topics,
        topic_filter=topic_filter,
        streams=_int(opts, "streams", 1, 1) or 1,
        starting=starting,
        starting_explicit=starting_explicit,
        ending=ending,
        ending_explicit=ending_explicit,
        ignore_committed=_bool(opts, "ignorecommittedoffsets", False),
        max_offsets_per_trigger=_int(opts, "maxoffsetspertrigger", None, 1),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        min_partitions=_int(opts, "minpartitions", None, 1),
        batch_size=batch_size,
        poll_timeout_ms=_int(opts, "polltimeoutms", 120000, 1) or 120000,
        bootstrap_override=opts.get("bootstrap.servers") or None,
        partitions=partitions,
        checkpoint_location=checkpoint,
        rows_per_task=_int(opts, "rowspertask", 20000, 0) or 0,
        fetch_offset_attempts=_int(opts, "fetchoffset.numretries", 3, 1) or 3,
        fetch_offset_interval_ms=_int(opts, "fetchoffset.retryintervalms", 1000, 0) or 0,
    )


def _partitions(raw: str | None, streaming: bool) -> frozenset[tuple[str, int]] | None:
    """ "orders/0,orders/3" -> {("orders", 0), ("orders", 3)}: a batch read of exactly these partitions
    (the ingest job pins its plan with it, so a partition added meanwhile is not read unrecorded)."""
    if raw is None:
        return None
    if streaming:
        raise OptionError(
            "option 'partitions' applies to batch reads (spark.read) only: a stream reads what the group assigns it"
        )
    keys = set()
    for item in (i.strip() for i in raw.split(",") if i.strip()):
        topic, slash, number = item.rpartition("/")
        if not slash or not topic or not number.isdigit():
            raise OptionError(f"option 'partitions': {item!r} is not topic/partition (e.g. orders/3)")
        keys.add((topic, int(number)))
    if not keys:
        raise OptionError("option 'partitions' names no partition")
    return frozenset(keys)
