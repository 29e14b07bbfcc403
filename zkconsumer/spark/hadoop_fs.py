"""HadoopFs: the few Hadoop FileSystem calls the ingest job makes, through Spark's JVM."""

from __future__ import annotations

from typing import Any


class HadoopFs:
    """The few file operations the job needs, through Hadoop's FileSystem (local, HDFS, S3...)."""

    def __init__(self, spark: Any, root: str) -> None:
        self._jvm = spark._jvm
        self._path = self._jvm.org.apache.hadoop.fs.Path
        self._fs = self._path(root).getFileSystem(spark._jsc.hadoopConfiguration())
        self.root = root.rstrip("/")

    def children(self, pattern: str) -> list[str]:
        found = self._fs.globStatus(self._path(f"{self.root}/{pattern}")) or []
        return sorted(status.getPath().getName() for status in found if status.isDirectory())

    def read(self, path: str) -> str | None:
        p = self._path(path)
        if not self._fs.exists(p):
            return None
        stream = self._fs.open(p)
        try:
            text: str = self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")  # py4j: a Java String
            return text
        finally:
            stream.close()

    def write(self, path: str, text: str) -> None:
        out = self._fs.create(self._path(path), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def delete(self, path: str) -> None:
        self._fs.delete(self._path(path), True)
