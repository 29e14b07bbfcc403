"""zkconsumer.admin: the operator's library over /consumers groups, what the CLI stands on (docs/admin.md).

groups (list, count members), snapshot and committed (one group's state), problems (the one problem
analysis, the watchdog's too), log_offsets (the brokers' log start/end), offset_files and
offset_targets (pure), offsets_write (plans and owner-fenced writes), group_delete (fenced deletes),
verdicts, status and sampler (lag verdicts), unstick and unstick_plan (make a group rebalance).
"""
