"""Running the console consumer: Ctrl-C and SIGTERM, printing records to stdout, the member's loop and its clean-up."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.cli.common import CliError, member_count, warn
from zkconsumer.cli.output.messages import PrintOptions, format_message, message_json
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.stream import ConsumerError, ConsumerTimeout
from zkconsumer.coordinator.subscription import TopicFilter
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import delete_tree


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


def _messages(stream: Any) -> Iterator[Any]:
    """The stream's messages; ends on consumer.timeout.ms (ConsumerTimeout)."""
    try:
        yield from stream
    except ConsumerTimeout:
        return


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
        _silence_stdout()
        return counted[0]


def writer(as_json: bool, printing: PrintOptions) -> Callable[[Any], None]:
    out = sys.stdout.buffer  # what click.get_binary_stream("stdout") returned (deprecated in click 8.5)

    def write(msg: Any) -> None:
        out.write((message_json(msg) + "\n").encode("utf-8") if as_json else format_message(msg, printing))
        out.flush()

    return write


def _silence_stdout() -> None:
    """After EPIPE (`consume | head`): point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def run_member(
    config: ConsumerConfig, topic_filter: TopicFilter, max_messages: int | None, write: Callable[[Any], None]
) -> int:
    from zkconsumer.connector import ConsumerConnector
    from zkconsumer.coordinator.listener import ConsumerRebalanceFailed

    count = 0
    stop = Stop()
    with stop:
        try:
            connector = ConsumerConnector(config)
        except ConnectionError as exc:
            raise CliError(str(exc)) from None
        started = False
        try:
            stream = connector.create_message_streams_by_filter(topic_filter, 1)[0]
            started = True
            for msg in _messages(stream):
                write(msg)
                count += 1
                if max_messages is not None and count >= max_messages:
                    break
        except KeyboardInterrupt:
            pass
        except BrokenPipeError:
            _silence_stdout()
        except (ConsumerError, ConsumerRebalanceFailed) as exc:
            raise CliError(f"consumer failed: {exc}") from None
        finally:
            stop.cleaning = True
            try:
                if started and config.auto_commit_enable:
                    connector.commit_offsets()  # every printed message counts as consumed
            except Exception as exc:  # noqa: BLE001 - report and still leave the group
                warn(f"final commit failed: {exc}")
            connector.shutdown()
    return count


def delete_group(client: KazooClient, group: str) -> None:
    """The original deleted /consumers/<console-consumer-N> on exit; we skip it if someone else joined."""
    if member_count(client, group):
        warn(f"not deleting /consumers/{group}: other members joined it")
        return
    try:
        delete_tree(client, znodes.group_path(group))
    except Exception as exc:  # noqa: BLE001 - best effort, like the original shutdown hook
        warn(f"could not delete /consumers/{group}: {exc}")
