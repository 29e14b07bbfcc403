"""The `zkconsumer` Python data source: bounded reads, and micro-batches through ZkStreamReader."""

from __future__ import annotations

import logging

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from zkconsumer.spark.kafka_read import SCHEMA, SCHEMA_WITH_HEADERS, RangeReading
from zkconsumer.spark.options import OptionError, SourceOptions, parse_options, wants_headers
from zkconsumer.spark.planning import plan_batch
from zkconsumer.spark.stream_reader import STREAM_API, ZkStreamReader

log = logging.getLogger("zkconsumer.spark.source")


class ZkConsumerDataSource(DataSource):
    """`spark.read` / `spark.readStream` `.format("zkconsumer")` over a legacy ZooKeeper consumer group."""

    @classmethod
    def name(cls) -> str:
        return "zkconsumer"

    def schema(self) -> StructType:
        return SCHEMA_WITH_HEADERS if wants_headers(self.options) else SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return ZkBatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if not STREAM_API:
            # 4.0/4.1 would run the query with maxOffsetsPerTrigger ignored (no read limit reaches
            # a Python source there): refuse instead.
            from pyspark import __version__

            raise OptionError(
                f"streaming reads of the zkconsumer source need pyspark >= 4.2 (this is {__version__}): "
                "earlier versions give a Python source no read limit (maxOffsetsPerTrigger would be "
                "ignored), no Trigger.AvailableNow and no start offset in latestOffset()"
            )
        return ZkStreamReader(parse_options(self.options, streaming=True))


class ZkBatchReader(RangeReading, DataSourceReader):
    """Committed offsets (or startingOffsets) -> log end (or endingOffsets); no group membership."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._reader_conf = opts.reader_config()

    def partitions(self) -> list[InputPartition]:
        plan = plan_batch(self.opts)
        ranges = [(p.key, p.start, p.end) for p in plan.partitions if p.size > 0]
        log.info("batch read of group %s: %d messages in %d partitions", self.opts.group_id, plan.total, len(ranges))
        return list(self._tasks(ranges, plan.bootstrap, plan.epochs))
