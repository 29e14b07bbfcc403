"""The parquet query the Spark tests and scripts start, and the rows its sink committed."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any


def parquet_query(df: Any, folder: Path, *, trigger_ms: int = 500, available_now: bool = False) -> Any:
    """Start `df` into a parquet sink at folder/out, checkpointed at folder/checkpoint: a processing-time
    trigger every `trigger_ms`, or Trigger.AvailableNow."""
    writer = (
        df.writeStream.format("parquet")
        .option("path", str(folder / "out"))
        .option("checkpointLocation", str(folder / "checkpoint"))
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": f"{trigger_ms} milliseconds"}
    return writer.trigger(**trigger).start()


def committed_files(output: Path) -> set[str]:
    """The parquet files the sink committed, from its _spark_metadata log: files a failed task
    attempt left behind are not part of the output."""
    meta = output / "_spark_metadata"
    files: set[str] = set()
    if meta.exists():
        for entry in sorted(meta.iterdir()):
            if entry.name.startswith("."):
                continue
            for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version
                record = json.loads(line)
                path = record["path"].removeprefix("file://")
                files.add(path) if record.get("action", "add") == "add" else files.discard(path)
    return files


def committed_rows(output: Path) -> collections.Counter[tuple[str, int, int, bytes]]:
    """(topic, partition, offset, value) of every row in the files the sink committed, with how
    often each is there."""
    import pyarrow.parquet as pq

    rows: collections.Counter[tuple[str, int, int, bytes]] = collections.Counter()
    for path in committed_files(output):
        table = pq.read_table(path, columns=["topic", "partition", "offset", "value"])
        rows.update(
            zip(
                table.column("topic").to_pylist(),
                table.column("partition").to_pylist(),
                table.column("offset").to_pylist(),
                table.column("value").to_pylist(),
            )
        )
    return rows
