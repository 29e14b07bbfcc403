"""The console consumer's process: Ctrl-C and SIGTERM, printing records to stdout, a closed stdout (the loop itself is admin.console_member)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from zkconsumer.cli.output.messages import PrintOptions, format_message, message_json


class Stop:
    """SIGINT/SIGTERM: the first raises KeyboardInterrupt in the main thread; during cleanup a second one
    exits at once."""

    def __init__(self) -> None:
        self.cleaning = False
        self._saved: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: Any) -> None:
        if self.cleaning:
            os.write(2, b"zkconsumer: interrupted again during shutdown; exiting without cleanup\n")
            os._exit(128 + signum)
        raise KeyboardInterrupt

    def __enter__(self) -> Stop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._saved.items():
            signal.signal(sig, previous)

    def cleanup_begins(self) -> None:
        """From now on a second signal exits at once, without waiting for the clean-up."""
        self.cleaning = True

    def after(self, exc: BaseException) -> None:
        """What ended the read: after a closed stdout (`consume | head`), stdout goes to /dev/null."""
        if isinstance(exc, BrokenPipeError):
            silence_stdout()


def count_until_stopped(read: Callable[[Callable[[Any], None]], int], write: Callable[[Any], None]) -> int:
    """Run `read` with a writer that counts; Ctrl-C, SIGTERM or a closed stdout end it with the count so far."""
    counted = [0]

    def counting(msg: Any) -> None:
        write(msg)
        counted[0] += 1

    try:
        return read(counting)
    except KeyboardInterrupt:
        return counted[0]
    except BrokenPipeError:
        silence_stdout()
        return counted[0]


def writer(as_json: bool, printing: PrintOptions) -> Callable[[Any], None]:
    out = sys.stdout.buffer  # what click.get_binary_stream("stdout") returned (deprecated in click 8.5)

    def write(msg: Any) -> None:
        out.write((message_json(msg) + "\n").encode("utf-8") if as_json else format_message(msg, printing))
        out.flush()

    return write


def silence_stdout() -> None:
    """After EPIPE (`consume | head`): point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
