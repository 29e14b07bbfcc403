"""zkconsumer.admin: the operator's library over /consumers groups, what the CLI stands on (docs/admin.md).

Import every name from here: the modules under admin/ are its private layout. Every function that
talks to ZooKeeper takes a started KazooClient from zkconsumer.zookeeper.client.connect, and every
error it raises on purpose is an AdminError (zkconsumer.errors): AdminUsageError, AdminRefused or
AdminUnavailable.

A name is imported from its module when it is first asked for (PEP 562), so a command loads only the
parts of the library it uses: the whole library costs each command-line verb tens of milliseconds.
`_HOMES` says where each name lives; the block under TYPE_CHECKING says the same to type checkers and
the API pages, and tests/unit/test_admin_face.py keeps the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES: dict[str, tuple[str, ...]] = {
    "zkconsumer.admin.broker_group": (
        "BrokerGroup",
        "membership_refusal",
        "open_broker_group",
    ),
    "zkconsumer.admin.committed": (
        "ZkOffsets",
        "read_offsets",
    ),
    "zkconsumer.admin.console_member": (
        "delete_console_group",
        "run_console_member",
    ),
    "zkconsumer.admin.group_delete": (
        "delete_fenced",
        "has_topic_offsets",
        "paths_to_delete",
    ),
    "zkconsumer.admin.groups": (
        "group_exists",
        "list_groups",
        "member_count",
    ),
    "zkconsumer.admin.kafka_commits": (
        "KafkaCommits",
        "open_kafka_commits",
    ),
    "zkconsumer.admin.group_lag": (
        "NOT_JUDGED",
        "OWNERSHIP_NAMES",
        "Judged",
        "Record",
        "Run",
        "Sample",
        "Seen",
        "age_text",
        "group_status",
        "group_why",
        "judge_runs",
        "ownership_of",
        "run_facts",
        "seen_record",
        "status_report",
    ),
    "zkconsumer.admin.log_offsets": (
        "BrokerAccess",
        "Warn",
        "Watermarks",
        "bootstrap_from_zookeeper",
        "legacy_settings",
        "log_warning",
        "open_watermarks",
        "reach",
    ),
    "zkconsumer.admin.migration_copy": (
        "CopyOutcome",
        "copy_offsets",
    ),
    "zkconsumer.admin.migration_evidence": (
        "Evidence",
        "direction_plans",
        "gather",
    ),
    "zkconsumer.admin.live_switch": (
        "SWITCH_TARGETS",
        "SwitchRun",
        "run_switch",
    ),
    "zkconsumer.admin.switch_status": ("live_switch_plan",),
    "zkconsumer.admin.offset_export": (
        "read_export",
        "spark_starting_offsets_of",
    ),
    "zkconsumer.admin.offset_files": (
        "FILE_FORMATS",
        "OffsetEntry",
        "decode_input",
        "export_json",
        "format_csv",
        "format_export",
        "parse_offsets_file",
    ),
    "zkconsumer.admin.offset_plan": (
        "OffsetPlan",
        "WantedOffset",
        "plan_writes",
    ),
    "zkconsumer.admin.offset_targets": (
        "Target",
        "clamp",
        "parse_datetime",
        "parse_duration",
        "range_problem",
        "reset_offset",
    ),
    "zkconsumer.admin.offsets_write": (
        "ExecuteResult",
        "Explain",
        "KafkaCommitter",
        "OffsetWrite",
        "PlannedWrite",
        "Progress",
        "ProgressBar",
        "execute",
        "no_progress",
        "summary",
        "write_offset",
    ),
    "zkconsumer.admin.partition_read": ("read_partition",),
    "zkconsumer.admin.rate_tracker": ("RateTracker",),
    "zkconsumer.admin.reset_partitions": (
        "TopicSpec",
        "reset_scope",
    ),
    "zkconsumer.admin.sampler": ("GroupSampler",),
    "zkconsumer.admin.snapshot": (
        "GroupSnapshot",
        "take_snapshot",
    ),
    "zkconsumer.admin.unstick_group": (
        "UnstickResult",
        "read_plan",
        "unstick",
    ),
    "zkconsumer.admin.unstick_plan": (
        "MemberFacts",
        "OwnerFacts",
        "UnstickBlocker",
        "UnstickPlan",
        "plan_unstick",
    ),
    "zkconsumer.admin.verdicts": (
        "Commit",
        "GroupVerdict",
        "LagAge",
        "LagStatus",
        "Ownership",
        "PartitionFacts",
        "PartitionVerdict",
        "group_verdict",
        "lag_status",
        "partition_verdict",
    ),
    "zkconsumer.errors": (
        "AdminError",
        "AdminRefused",
        "AdminUnavailable",
        "AdminUsageError",
        "DeleteRefused",
        "InputError",
        "LogOffsetsUnavailable",
        "UnknownGroup",
    ),
    "zkconsumer.group_problems": (
        "REBALANCE_PROBLEMS",
        "Member",
        "Owner",
        "PartitionState",
        "Problem",
        "analyse",
        "member_problems",
        "ownership_problems",
    ),
}

if TYPE_CHECKING:
    from zkconsumer.admin.broker_group import (
        BrokerGroup as BrokerGroup,
        membership_refusal as membership_refusal,
        open_broker_group as open_broker_group,
    )
    from zkconsumer.admin.committed import ZkOffsets as ZkOffsets, read_offsets as read_offsets
    from zkconsumer.admin.console_member import (
        delete_console_group as delete_console_group,
        run_console_member as run_console_member,
    )
    from zkconsumer.admin.group_delete import (
        delete_fenced as delete_fenced,
        has_topic_offsets as has_topic_offsets,
        paths_to_delete as paths_to_delete,
    )
    from zkconsumer.admin.groups import (
        group_exists as group_exists,
        list_groups as list_groups,
        member_count as member_count,
    )
    from zkconsumer.admin.kafka_commits import KafkaCommits as KafkaCommits, open_kafka_commits as open_kafka_commits
    from zkconsumer.admin.group_lag import (
        NOT_JUDGED as NOT_JUDGED,
        OWNERSHIP_NAMES as OWNERSHIP_NAMES,
        Judged as Judged,
        Record as Record,
        Run as Run,
        Sample as Sample,
        Seen as Seen,
        age_text as age_text,
        group_status as group_status,
        group_why as group_why,
        judge_runs as judge_runs,
        ownership_of as ownership_of,
        run_facts as run_facts,
        seen_record as seen_record,
        status_report as status_report,
    )
    from zkconsumer.admin.log_offsets import (
        BrokerAccess as BrokerAccess,
        Warn as Warn,
        Watermarks as Watermarks,
        bootstrap_from_zookeeper as bootstrap_from_zookeeper,
        legacy_settings as legacy_settings,
        log_warning as log_warning,
        open_watermarks as open_watermarks,
        reach as reach,
    )
    from zkconsumer.admin.migration_copy import CopyOutcome as CopyOutcome, copy_offsets as copy_offsets
    from zkconsumer.admin.migration_evidence import (
        Evidence as Evidence,
        direction_plans as direction_plans,
        gather as gather,
    )
    from zkconsumer.admin.live_switch import SWITCH_TARGETS as SWITCH_TARGETS
    from zkconsumer.admin.live_switch import SwitchRun as SwitchRun
    from zkconsumer.admin.live_switch import run_switch as run_switch
    from zkconsumer.admin.switch_status import live_switch_plan as live_switch_plan
    from zkconsumer.admin.offset_export import (
        read_export as read_export,
        spark_starting_offsets_of as spark_starting_offsets_of,
    )
    from zkconsumer.admin.offset_files import (
        FILE_FORMATS as FILE_FORMATS,
        OffsetEntry as OffsetEntry,
        decode_input as decode_input,
        export_json as export_json,
        format_csv as format_csv,
        format_export as format_export,
        parse_offsets_file as parse_offsets_file,
    )
    from zkconsumer.admin.offset_plan import (
        OffsetPlan as OffsetPlan,
        WantedOffset as WantedOffset,
        plan_writes as plan_writes,
    )
    from zkconsumer.admin.offset_targets import (
        Target as Target,
        clamp as clamp,
        parse_datetime as parse_datetime,
        parse_duration as parse_duration,
        range_problem as range_problem,
        reset_offset as reset_offset,
    )
    from zkconsumer.admin.offsets_write import (
        ExecuteResult as ExecuteResult,
        Explain as Explain,
        KafkaCommitter as KafkaCommitter,
        OffsetWrite as OffsetWrite,
        PlannedWrite as PlannedWrite,
        Progress as Progress,
        ProgressBar as ProgressBar,
        execute as execute,
        no_progress as no_progress,
        summary as summary,
        write_offset as write_offset,
    )
    from zkconsumer.admin.partition_read import read_partition as read_partition
    from zkconsumer.admin.rate_tracker import RateTracker as RateTracker
    from zkconsumer.admin.reset_partitions import TopicSpec as TopicSpec, reset_scope as reset_scope
    from zkconsumer.admin.sampler import GroupSampler as GroupSampler
    from zkconsumer.admin.snapshot import GroupSnapshot as GroupSnapshot, take_snapshot as take_snapshot
    from zkconsumer.admin.unstick_group import (
        UnstickResult as UnstickResult,
        read_plan as read_plan,
        unstick as unstick,
    )
    from zkconsumer.admin.unstick_plan import (
        MemberFacts as MemberFacts,
        OwnerFacts as OwnerFacts,
        UnstickBlocker as UnstickBlocker,
        UnstickPlan as UnstickPlan,
        plan_unstick as plan_unstick,
    )
    from zkconsumer.admin.verdicts import (
        Commit as Commit,
        GroupVerdict as GroupVerdict,
        LagAge as LagAge,
        LagStatus as LagStatus,
        Ownership as Ownership,
        PartitionFacts as PartitionFacts,
        PartitionVerdict as PartitionVerdict,
        group_verdict as group_verdict,
        lag_status as lag_status,
        partition_verdict as partition_verdict,
    )
    from zkconsumer.errors import (
        AdminError as AdminError,
        AdminRefused as AdminRefused,
        AdminUnavailable as AdminUnavailable,
        AdminUsageError as AdminUsageError,
        DeleteRefused as DeleteRefused,
        InputError as InputError,
        LogOffsetsUnavailable as LogOffsetsUnavailable,
        UnknownGroup as UnknownGroup,
    )
    from zkconsumer.group_problems import (
        REBALANCE_PROBLEMS as REBALANCE_PROBLEMS,
        Member as Member,
        Owner as Owner,
        PartitionState as PartitionState,
        Problem as Problem,
        analyse as analyse,
        member_problems as member_problems,
        ownership_problems as ownership_problems,
    )

__all__ = sorted(name for names in _HOMES.values() for name in names)
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
