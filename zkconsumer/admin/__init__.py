"""zkconsumer.admin: the operator's library over /consumers groups, what the CLI stands on (docs/admin.md).

groups (list, count members), snapshot and committed (one group's state), problems (the one problem
analysis, the watchdog's too), log_offsets (the brokers' log start/end), offset_files and
offset_targets (pure), offset_plan and reset_scope (offset plans checked before any write),
offsets_write (owner-fenced writes), offset_export, kafka_commits and broker_group (the Kafka side),
migration_evidence and migration_copy (`migrate`), partition_read and console_member (`consume`),
group_delete (fenced deletes), verdicts, status and sampler (lag verdicts), unstick and
unstick_plan (make a group rebalance). Errors: AdminError (admin_error), DeleteRefused, UnknownGroup.
"""
