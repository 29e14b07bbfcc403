"""Progress: the ingest job's progress lines, written at most once a period."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


def log(message: str) -> None:
    """One line of the job's own output on stderr."""
    print(f"[zkconsumer-ingest] {message}", file=sys.stderr, flush=True)


class Progress:
    """Prints the running stage's task counts to stderr every few seconds (SparkStatusTracker)."""

    def __init__(self, spark: Any, label: str, every_s: float = 2.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._label, self._every = label, every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ingest-progress", daemon=True)
        self._began = time.monotonic()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)

    def _loop(self) -> None:
        last = None
        while not self._done.wait(self._every):
            stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
            line = (
                ", ".join(
                    f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s is not None
                )
                or "planning"
            )
            if line != last:
                log(f"{self._label}: {line} ({time.monotonic() - self._began:.0f}s)")
                last = line
