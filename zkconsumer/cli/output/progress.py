"""A rich progress bar on stderr for a long run of writes, shown only on a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from zkconsumer.admin import ProgressBar, no_progress

PROGRESS_THRESHOLD = 50


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class RichBar:
    """One task of a rich Progress, advanced a step at a time."""

    def __init__(self, progress: Any, task: Any) -> None:
        self._progress, self._task = progress, task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)


@contextlib.contextmanager
def progress(total: int, description: str) -> Iterator[ProgressBar]:
    """A rich progress bar on stderr for `total` steps, only when stderr is a terminal and total is large."""
    if total < PROGRESS_THRESHOLD or not stderr_is_tty():
        with no_progress(total, description) as silent:
            yield silent
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        yield RichBar(bar, bar.add_task(description, total=total))
