"""What a restarted query says where its checkpoint and the group's ZooKeeper offsets disagree."""

from __future__ import annotations

import logging
from typing import Any

from zkconsumer.spark.checkpoint import CheckpointError, CheckpointLog, previous_end
from zkconsumer.spark.offsets import Key
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.reconcile import describe, disagreements, split_trailing

log = logging.getLogger("zkconsumer.spark.source")  # the stream reader's logger: one place to watch


def report_restart(
    opts: SourceOptions, start: dict[str, Any], checkpoint: dict[Key, int], zookeeper: dict[Key, int]
) -> None:
    """A resumed query follows its checkpoint, not ZooKeeper: say so loudly where they disagree
    (an operator's `offsets reset`, another member's progress), quietly where ZooKeeper only
    trails by the query's own last batch (what a stop or a crash leaves)."""
    differ = disagreements(checkpoint, zookeeper)
    if not differ:
        return
    hint = ""
    if opts.checkpoint_location:
        try:
            trailing, differ = split_trailing(differ, previous_end(CheckpointLog(opts.checkpoint_location), start))
        except CheckpointError as exc:
            trailing, hint = {}, f" (could not tell the query's own last commit apart: {exc})"
        if trailing:
            log.info(
                "resuming from the checkpoint; ZooKeeper is one batch behind it, at the query's own last commit: %s",
                describe(trailing),
            )
    else:
        hint = " (set the option checkpointLocation to the query's checkpoint to tell its own last commit apart)"
    if differ:
        log.warning(
            "group %s: the checkpoint and ZooKeeper disagree: %s. The checkpoint wins: these partitions "
            "resume at the checkpoint's offsets and ZooKeeper is overwritten with them at this trigger. "
            "To start from the ZooKeeper offsets instead (e.g. after `zkconsumer offsets reset`), start "
            "the query with a new checkpoint location%s",
            opts.group_id,
            describe(differ),
            hint,
        )
