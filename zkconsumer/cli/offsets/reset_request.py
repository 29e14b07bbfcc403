"""ResetRequest: `offsets reset`'s options as one typed value, and what they ask for (the target, the topics)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from zkconsumer.admin import BrokerAccess, InputError, Target, TopicSpec, parse_datetime, parse_duration
from zkconsumer.cli.common import EXIT_USAGE, CliError
from zkconsumer.cli.formats import parse_partitions, parse_topic_specs

TARGETS = "--to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --by-duration, --shift-by"


@dataclass(frozen=True)
class ResetRequest:
    """Every option of `zkconsumer offsets reset`, as click parsed them (the field names are the
    options' parameter names)."""

    zookeeper: str
    zk_digest: str | None
    zk_timeout: float
    groups: tuple[str, ...]
    all_groups: bool
    topics: tuple[str, ...]
    all_topics: bool
    partitions: str | None
    to_earliest: bool
    to_latest: bool
    to_current: bool
    to_offset: int | None
    to_datetime: str | None
    by_duration: str | None
    shift_by: int | None
    execute: bool
    export_csv: bool
    clamp_offsets: bool
    force: bool
    zookeeper_only: bool
    brokers: BrokerAccess
    as_json: bool

    def target(self) -> tuple[Target, int | None]:
        """The one reset target given, and the moment in epoch ms of a time target; CliError (exit 2) otherwise."""
        chosen = [
            name
            for name, given in (
                ("--to-earliest", self.to_earliest),
                ("--to-latest", self.to_latest),
                ("--to-current", self.to_current),
                ("--to-offset", self.to_offset is not None),
                ("--to-datetime", self.to_datetime is not None),
                ("--by-duration", self.by_duration is not None),
                ("--shift-by", self.shift_by is not None),
            )
            if given
        ]
        if len(chosen) != 1:
            raise CliError(
                f"give exactly one of {TARGETS}" + (f" (got {', '.join(chosen)})" if chosen else ""), EXIT_USAGE
            )
        simple = {"--to-earliest": "earliest", "--to-latest": "latest", "--to-current": "current"}
        if chosen[0] in simple:
            return Target(simple[chosen[0]]), None
        if self.to_offset is not None:
            if self.to_offset < 0:
                raise CliError(f"--to-offset {self.to_offset}: an offset is >= 0", EXIT_USAGE)
            return Target("offset", self.to_offset), None
        if self.shift_by is not None:
            return Target("shift", self.shift_by), None
        try:
            if self.by_duration is not None:
                return Target("datetime"), int(time.time() * 1000) - parse_duration(self.by_duration)
            assert self.to_datetime is not None  # the one chosen
            return Target("datetime"), parse_datetime(self.to_datetime)
        except InputError as exc:
            raise CliError(f"{chosen[0]}: {exc}", EXIT_USAGE) from None

    def topic_specs(self) -> list[TopicSpec] | None:
        """The --topic specs with --partitions applied (None: --all-topics); CliError (exit 2) for bad ones."""
        if self.export_csv and self.as_json:
            raise CliError("--export and --json are two outputs: give one", EXIT_USAGE)
        if self.all_topics == bool(self.topics):
            raise CliError("give --topic (repeatable) or --all-topics", EXIT_USAGE)
        try:
            specs = parse_topic_specs(self.topics) if self.topics else None
            if self.partitions is not None:
                if specs is None or len(specs) != 1 or specs[0][1] is not None:
                    raise InputError(
                        "--partitions goes with exactly one --topic that lists no partitions (or use t:0,1)"
                    )
                specs = [(specs[0][0], parse_partitions(self.partitions))]
        except InputError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        return specs
