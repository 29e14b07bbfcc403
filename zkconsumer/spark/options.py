"""Parse the `zkconsumer` data source options: source settings apart, legacy consumer properties as-is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetcher import FetchSettings
from zkconsumer.coordinator.subscription import Blacklist, TopicFilter, Whitelist, validate_topic
from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.broker_trouble import DEFAULT_UNREADABLE_TIMEOUT_MS
from zkconsumer.spark.offsets import EARLIEST
from zkconsumer.spark.position_options import partition_times, pinned_partitions, position_spec
from zkconsumer.spark.refused_options import outside_subscription, refusals
from zkconsumer.spark.triggers import DEFAULT_MAX_TRIGGER_DELAY_MS, duration_ms

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
        "includeheaders",
        "maxrecordsperpartition",
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "endingtimestamp",
        "endingoffsetsbytimestamp",
        "minoffsetspertrigger",
        "maxtriggerdelay",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
        "unreadablepartitiontimeoutms",
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
    include_headers: bool = False  # the headers column (Spark's includeHeaders)
    starting_time: int | None = None  # startingTimestamp (ms): every partition of a new query/read
    starting_by_time: dict[tuple[str, int], int] = field(default_factory=dict)  # startingOffsetsByTimestamp
    starting_time_strategy: str = "error"  # no message at or after the time: error | latest
    ending_time: int | None = None  # endingTimestamp (batch)
    ending_by_time: dict[tuple[str, int], int] = field(default_factory=dict)  # endingOffsetsByTimestamp (batch)
    min_offsets_per_trigger: int | None = None  # a trigger with fewer waits, up to max_trigger_delay_ms
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    max_records_per_partition: int | None = None  # ranges split into tasks of at most this many offsets
    fetch_offset_attempts: int = 3  # fetchOffset.numRetries: log-offset lookups tried this often (Spark's count)
    fetch_offset_interval_ms: int = 1000  # fetchOffset.retryIntervalMs: the wait between those attempts
    # a stream's partition the brokers do not answer for this long fails the query, named (ours, not Spark's)
    unreadable_timeout_ms: int = DEFAULT_UNREADABLE_TIMEOUT_MS

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

    @property
    def dual_commit(self) -> bool:
        """offsets.storage=kafka with dual commit (streams only): the member commits to ZooKeeper, then
        the full owned map to the brokers."""
        return self.config.offsets_storage == "kafka" and self.config.dual_commit_enabled

    def isolation_committed(self) -> bool:
        """Plan ends the way executors read (librdkafka's default isolation is read_committed)."""
        return self.config.librdkafka_overrides.get("isolation.level", "read_committed") != "read_uncommitted"


def wants_headers(options: Mapping[str, str]) -> bool:
    """The includeHeaders option alone: Spark asks for the schema before the reader exists."""
    return _bool({str(k).lower(): str(v) for k, v in options.items() if v is not None}, "includeheaders", False)


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the options of one DataFrame; raises OptionError/ConfigError with the culprit named."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    refused = refusals(opts)
    if refused:
        raise OptionError("; ".join(refused))
    if "reuseconsumers" in opts:
        raise OptionError(
            "option 'reuseConsumers' is gone: pooled consumers measured slower than new ones; a task now "
            "reads all its partitions through one consumer (see 'rowsPerTask'). Remove the option"
        )
    batch_size = _int(opts, "batchsize", 20000, 1) or 20000
    if batch_size > MAX_BATCH_SIZE:
        raise OptionError(f"option 'batchSize' must be <= {MAX_BATCH_SIZE:,} (confluent-kafka's consume() limit)")
    consumer = {k: v for k, v in opts.items() if k not in SOURCE_OPTIONS}
    consumer |= {"librdkafka.bootstrap.servers": opts["bootstrap.servers"]} if opts.get("bootstrap.servers") else {}
    for required in ("zookeeper.connect", "group.id"):
        if required not in consumer:
            raise OptionError(f"option {required!r} is required")
    config = ConsumerConfig.from_mapping(consumer)  # validates every legacy property now, on the driver
    _check_offsets_storage(config, streaming)
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
    try:
        starting, starting_explicit = position_spec(opts.get("startingoffsets"), "startingOffsets", default_start)
        ending, ending_explicit = position_spec(opts.get("endingoffsets"), "endingOffsets", "latest")
        starting_by_time = partition_times(opts.get("startingoffsetsbytimestamp"), "startingOffsetsByTimestamp")
        ending_by_time = partition_times(opts.get("endingoffsetsbytimestamp"), "endingOffsetsByTimestamp")
        partitions = pinned_partitions(opts["partitions"]) if "partitions" in opts else None
    except ValueError as exc:  # the parsers name the option and the value
        raise OptionError(str(exc)) from None
    if partitions is not None and streaming:
        raise OptionError(
            "option 'partitions' applies to batch reads (spark.read) only: a stream reads what the group assigns it"
        )
    if streaming and "endingoffsets" in opts:
        raise OptionError("option 'endingOffsets' applies to batch reads (spark.read) only")
    if ending == "earliest" and not ending_explicit:
        raise OptionError("option 'endingOffsets' must be latest or a JSON object")
    if EARLIEST in ending_explicit.values():  # as Spark's source: an end at the log start reads nothing
        raise OptionError("option 'endingOffsets': -2 (earliest) is not an end; use -1 (latest) or an offset")
    for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        if not streaming and name.lower() in opts:
            raise OptionError(f"option {name!r} applies to streaming reads only")
    try:
        max_delay = duration_ms(opts.get("maxtriggerdelay", "15m"))
    except ValueError as exc:
        raise OptionError(f"option 'maxTriggerDelay': {exc}") from None
    if "maxtriggerdelay" in opts and "minoffsetspertrigger" not in opts:
        raise OptionError("option 'maxTriggerDelay' applies only with 'minOffsetsPerTrigger' (as in Spark)")
    if streaming and ("endingtimestamp" in opts or ending_by_time):
        raise OptionError(
            "options 'endingTimestamp' and 'endingOffsetsByTimestamp' apply to batch reads (spark.read) only"
        )
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"option 'startingOffsetsByTimestampStrategy' must be error or latest, not {strategy!r}")
    checkpoint = opts.get("checkpointlocation", "").strip() or None
    if checkpoint is not None and not streaming:
        raise OptionError("option 'checkpointLocation' applies to streaming reads only (the query's checkpoint)")
    parsed = SourceOptions(
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
        include_headers=_bool(opts, "includeheaders", False),
        max_records_per_partition=_int(opts, "maxrecordsperpartition", None, 1),
        starting_time=_int(opts, "startingtimestamp", None, 0),
        starting_by_time=starting_by_time,
        starting_time_strategy=strategy,
        ending_time=_int(opts, "endingtimestamp", None, 0),
        ending_by_time=ending_by_time,
        min_offsets_per_trigger=_int(opts, "minoffsetspertrigger", None, 1),
        max_trigger_delay_ms=max_delay,
        fetch_offset_attempts=_int(opts, "fetchoffset.numretries", 3, 1) or 3,
        fetch_offset_interval_ms=_int(opts, "fetchoffset.retryintervalms", 1000, 0) or 0,
        unreadable_timeout_ms=_int(opts, "unreadablepartitiontimeoutms", None, 1) or DEFAULT_UNREADABLE_TIMEOUT_MS,
    )
    if (outside := outside_subscription(parsed)) is not None:
        raise OptionError(outside)
    return parsed


def _check_offsets_storage(config: ConsumerConfig, streaming: bool) -> None:
    """ZooKeeper offsets, or dual commit (offsets.storage=kafka, dual.commit.enabled=true) for a
    stream, whose member commits to ZooKeeper and then to the brokers as the connector does."""
    if config.offsets_storage != "kafka":
        if config.dual_commit_enabled:  # set on its own: the connector (and Scala) would ignore it
            raise OptionError(
                "option 'dual.commit.enabled': true takes effect only with offsets.storage=kafka, as in the "
                "ConsumerConnector and Scala's consumer; add offsets.storage=kafka to commit to ZooKeeper "
                "and to the brokers (docs/migration.md)"
            )
        return
    if not config.dual_commit_enabled:
        # Reads start at ZooKeeper offsets and commits go there: a group that keeps its offsets in
        # Kafka only would be read from stale positions, and its members would not see our commits.
        raise OptionError(
            "offsets.storage=kafka with dual.commit.enabled=false: the zkconsumer source reads and commits "
            "the group's ZooKeeper offsets; use Spark's kafka source for a group that keeps its offsets in "
            "Kafka only"
        )
    if not streaming:
        raise OptionError(
            "offsets.storage=kafka (dual commit) applies to streaming reads (spark.readStream) only: batch "
            "reads and the ingest job read and commit the group's ZooKeeper offsets; remove offsets.storage "
            "and dual.commit.enabled here"
        )
