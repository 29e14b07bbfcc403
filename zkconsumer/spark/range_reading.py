"""RangeReading: the executor side both readers share, reading one ReadTask per Spark task."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

from zkconsumer.spark.kafka_read import read_task
from zkconsumer.spark.offsets import Key, ReadTask, pack, split
from zkconsumer.spark.options import SourceOptions


class RangeReading:
    """Executor side, shared by both readers: a pickled copy reads one ReadTask per Spark task."""

    opts: SourceOptions
    _reader_conf: dict[str, object]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ReadTask):
            return iter(())  # Spark's single placeholder task when there is nothing to read
        return read_task(
            partition.ranges,
            self._reader_conf,
            batch_size=self.opts.batch_size,
            fail_on_data_loss=self.opts.fail_on_data_loss,
            poll_timeout_s=self.opts.poll_timeout_ms / 1000.0,
            include_headers=self.opts.include_headers,
        )

    def _tasks(
        self, ranges: list[tuple[Key, int, int]], bootstrap: str, epochs: dict[str, int | None]
    ) -> list[ReadTask]:
        cap = self.opts.max_records_per_partition
        parts = split(ranges, bootstrap, self.opts.min_partitions, epochs, cap)
        # maxRecordsPerPartition caps a task's rows, as in Spark's source: no packing of ranges then
        return pack(parts, 0 if cap else self.opts.rows_per_task, self.opts.min_partitions)
