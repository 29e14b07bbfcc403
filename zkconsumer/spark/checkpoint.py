"""Read a streaming query's Spark checkpoint (commit log, offset log) from the planner process, through pyarrow.fs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.offsets import Key, decode_offsets
from zkconsumer.spark.reconcile import canonical, own_entry

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

COMMITS, OFFSETS = "commits", "offsets"
OFFSET_LOG_VERSION = "v1"  # Spark 3.x and 4.x write this one: a header line, metadata, one line per source


class CheckpointError(ZkConsumerError, RuntimeError):
    """The checkpoint cannot be read or is not in a format this source understands."""


def batch_ids(names: list[str]) -> list[int]:
    """Batch ids of a metadata log directory, ascending: only all-digit names are entries (Spark's
    writes go through hidden temporary files and leave `.N.crc` checksums next to them)."""
    return sorted(int(n) for n in names if n.isdigit())


def parse_offset_entries(text: str) -> list[dict[str, Any] | None]:
    """One `offsets/<batch>` file -> each source's end offsets, in source order (None: "-", the
    source had nothing in that batch, or an offset that is not a JSON object)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != OFFSET_LOG_VERSION:
        found = lines[0].strip() if lines else "an empty file"
        raise CheckpointError(f"offset log entry starts with {found!r}, expected {OFFSET_LOG_VERSION!r}")
    entries: list[dict[str, Any] | None] = []
    for line in lines[2:]:  # lines[1] is the batch metadata (watermark, timestamp, conf)
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None  # "-" or another source's offset format
        entries.append(doc if isinstance(doc, dict) else None)
    return entries


class CheckpointLog:
    """The `commits/` and `offsets/` logs under a checkpoint location (a local path or any URI
    pyarrow.fs opens: file://, hdfs://, s3://, gs://, ...). Reads only; never writes."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._fs: FileSystem | None = None
        self._root = ""

    def _open(self) -> tuple[FileSystem, str]:
        if self._fs is None:
            from pyarrow import fs

            try:
                if "://" in self.location or self.location.startswith("file:"):
                    self._fs, self._root = fs.FileSystem.from_uri(self.location)
                else:  # a plain path: Spark resolves it against the driver's working directory, as os does
                    self._fs, self._root = fs.LocalFileSystem(), os.path.abspath(self.location)
            except Exception as exc:  # noqa: BLE001 - unknown scheme, no libhdfs, no credentials
                raise CheckpointError(f"cannot open checkpoint {self.location!r}: {exc}") from exc
        return self._fs, self._root.rstrip("/")

    def _names(self, sub: str) -> list[str]:
        from pyarrow import fs

        filesystem, root = self._open()
        try:
            infos = filesystem.get_file_info(fs.FileSelector(f"{root}/{sub}", allow_not_found=True))
        except Exception as exc:  # noqa: BLE001 - permissions, network: named in the error
            raise CheckpointError(f"cannot list {self.location}/{sub}: {exc}") from exc
        return [i.base_name for i in infos if i.type == fs.FileType.File]

    def exists(self) -> bool:
        """Has Spark written an offset log here (i.e. is this a query's checkpoint)?"""
        from pyarrow import fs

        filesystem, root = self._open()
        try:
            return filesystem.get_file_info(f"{root}/{OFFSETS}").type == fs.FileType.Directory
        except Exception as exc:  # noqa: BLE001
            raise CheckpointError(f"cannot read {self.location}/{OFFSETS}: {exc}") from exc

    def committed(self) -> list[int]:
        """Batches the sink committed (Spark writes commits/<id> only after the sink's commit)."""
        return batch_ids(self._names(COMMITS))

    def planned(self) -> list[int]:
        """Batches Spark planned (offsets/<id> is written before the batch runs)."""
        return batch_ids(self._names(OFFSETS))

    def entries(self, batch: int) -> list[dict[str, Any] | None]:
        """Each source's end offsets of `batch`, in source order."""
        filesystem, root = self._open()
        path = f"{root}/{OFFSETS}/{batch}"
        try:
            with filesystem.open_input_stream(path) as stream:
                text = stream.read().decode("utf-8")
        except Exception as exc:  # noqa: BLE001 - purged by retention, or unreadable
            raise CheckpointError(f"cannot read {self.location}/{OFFSETS}/{batch}: {exc}") from exc
        return parse_offset_entries(text)


def last_completed(log: CheckpointLog, known: Iterable[str]) -> tuple[int | None, Mapping[str, Any] | None]:
    """(last batch the sink committed, our source's end offsets in it); the end is None when that
    batch's offsets are none of `known` (planned by an earlier run, or another query's checkpoint)."""
    committed = log.committed()
    if not committed:
        return None, None
    hit = own_entry(log.entries(committed[-1]), known)
    return committed[-1], (hit[1] if hit is not None else None)


def previous_end(log: CheckpointLog, start: Mapping[str, Any]) -> dict[Key, int]:
    """Positions at the end of the batch before the one that ends at `start` (empty when the log
    does not have it): where the query's own commits left ZooKeeper if it stopped or died after that."""
    planned = log.planned()
    for batch in reversed(planned[-3:]):  # `start` is the newest entry, or next to it
        hit = own_entry(log.entries(batch), [canonical(start)])
        if hit is None:
            continue
        if batch - 1 not in planned:
            return {}
        before = log.entries(batch - 1)
        entry = before[hit[0]] if hit[0] < len(before) else None
        return decode_offsets(entry) if entry is not None else {}
    return {}
