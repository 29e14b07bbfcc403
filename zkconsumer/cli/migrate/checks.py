"""What both `migrate` verbs check of their options, and the exit status of a blocked move."""

from __future__ import annotations

from zkconsumer.cli.common import EXIT_USAGE, CliError
from zkconsumer.zookeeper import znodes

EXIT_BLOCKED = 3  # a blocker for the asked direction: nothing was written


def checked_topics(topics: tuple[str, ...]) -> list[str] | None:
    for topic in topics:
        try:
            znodes.topic_path(topic)
        except ValueError:
            raise CliError(f"invalid topic name {topic!r}", EXIT_USAGE) from None
    return sorted(set(topics)) if topics else None
