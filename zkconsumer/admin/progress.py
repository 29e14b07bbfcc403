"""How a long run of writes reports itself: a progress bar the caller supplies (none by default), and how errors are worded."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Protocol, cast


class ProgressBar(Protocol):
    """`n` steps of a run of writes done (the command line's rich bar is one)."""

    def advance(self, n: int = 1) -> None: ...


# (total, description) -> a bar to advance once per step, for the length of the run.
Progress = Callable[[int, str], contextlib.AbstractContextManager[ProgressBar]]
# An error an operator can cause, worded in one line; None: a bug, to be raised.
Explain = Callable[[BaseException], str | None]

_SILENT = cast(ProgressBar, types.SimpleNamespace(advance=lambda n=1: None))


@contextlib.contextmanager
def no_progress(_total: int, _description: str) -> Iterator[ProgressBar]:
    """The default: nothing shown."""
    yield _SILENT
