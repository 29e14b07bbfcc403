"""Opt-in timings of the source's phases, driver planning and executor reads, for `spark_ingest.py --profile`.

Set ZKCONSUMER_SPARK_PROFILE to a folder (the driver's environment, and `spark.executorEnv.` for
executors on a cluster): every process of the source then appends one JSON line per timed phase
to `<folder>/profile-<pid>.jsonl`. Unset, `phase()` costs one dictionary lookup.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

ENV = "ZKCONSUMER_SPARK_PROFILE"


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def record(name: str, seconds: float, **tags: object) -> None:
    """Append one timing (best effort: a profile must never fail a read)."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    line = json.dumps({"phase": name, "ms": round(seconds * 1000.0, 3), "at": time.time(), **tags})
    try:
        with open(os.path.join(folder, f"profile-{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
            out.write(line + "\n")
    except OSError:
        pass


@contextmanager
def phase(name: str, **tags: object) -> Iterator[None]:
    """Time the block as `name` when profiling is on."""
    if not os.environ.get(ENV):
        yield
        return
    began = time.perf_counter()
    try:
        yield
    finally:
        record(name, time.perf_counter() - began, **tags)


def timed(name: str) -> Callable[[F], F]:
    """Decorate a function so each call is a `phase(name)`."""

    def decorate(fn: F) -> F:
        @wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with phase(name):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate
