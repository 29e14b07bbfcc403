"""The console consumer's member: join a group, hand each message to the caller, commit what was handed on, leave; and its temporary group's removal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.groups import member_count
from zkconsumer.admin.log_offsets import Warn, log_warning
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.coordinator.subscription import TopicFilter
from zkconsumer.errors import AdminError, AdminUnavailable, ConsumerError, ConsumerTimeout
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import delete_tree


def _messages(stream: Any) -> Iterator[Any]:
    """The stream's messages; ends on consumer.timeout.ms (ConsumerTimeout)."""
    try:
        yield from stream
    except ConsumerTimeout:
        return


def _nothing() -> None:
    pass


def run_console_member(
    config: ConsumerConfig,
    topic_filter: TopicFilter,
    max_messages: int | None,
    write: Callable[[Any], None],
    *,
    ends: tuple[type[BaseException], ...] = (),
    on_end: Callable[[BaseException], None] | None = None,
    on_leaving: Callable[[], None] = _nothing,
    warn: Warn = log_warning,
) -> int:
    """Join the group `config` names as one member of one stream over `topic_filter`, and hand each
    message to `write` until `max_messages`, consumer.timeout.ms, or one of `ends` is raised (by
    `write` or meanwhile: Ctrl-C, a closed stdout), which ends the read as if the messages had run
    out (`on_end` is told which). Then, with auto-commit on, commit: every message handed on counts
    as consumed; then leave the group (`on_leaving` first). Returns how many were handed on.
    AdminUnavailable when the member cannot start, AdminError when it fails."""
    from zkconsumer.connector import ConsumerConnector
    from zkconsumer.errors import ConsumerRebalanceFailed

    try:
        connector = ConsumerConnector(config)
    except ConnectionError as exc:
        raise AdminUnavailable(str(exc)) from None
    count = 0
    started = False
    try:
        stream = connector.create_message_streams_by_filter(topic_filter, 1)[0]
        started = True
        for msg in _messages(stream):
            write(msg)
            count += 1
            if max_messages is not None and count >= max_messages:
                break
    except ends as exc:
        if on_end is not None:
            on_end(exc)
    except (ConsumerError, ConsumerRebalanceFailed) as exc:
        raise AdminError(f"consumer failed: {exc}") from None
    finally:
        on_leaving()
        try:
            if started and config.auto_commit_enable:
                connector.commit_offsets()
        except Exception as exc:  # noqa: BLE001 - report and still leave the group
            warn(f"final commit failed: {exc}")
        connector.shutdown()
    return count


def delete_console_group(client: KazooClient, group: str, *, warn: Warn = log_warning) -> None:
    """Delete a console consumer's temporary /consumers/<group> on exit, as the original's shutdown
    hook did; not if another member joined it meanwhile, and a failure is only warned of."""
    if member_count(client, group):
        warn(f"not deleting /consumers/{group}: other members joined it")
        return
    try:
        delete_tree(client, znodes.group_path(group))
    except Exception as exc:  # noqa: BLE001 - best effort, like the original shutdown hook
        warn(f"could not delete /consumers/{group}: {exc}")
