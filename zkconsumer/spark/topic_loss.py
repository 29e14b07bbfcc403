"""Topics a stream tracks that were deleted, or deleted and created again: their positions dropped, or the query failed (failOnDataLoss), as Spark's source."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from zkconsumer.spark.offsets import DataLossError, Key
from zkconsumer.spark.reconcile import split_stale

log = logging.getLogger("zkconsumer.spark.source")  # the stream reader's lines


def still_counted(
    before: Mapping[Key, int],
    recorded: Mapping[str, int],
    current: Mapping[str, int],
    deleted: set[str],
    *,
    fail_on_data_loss: bool,
) -> dict[Key, int]:
    """The tracked positions that still mean something. A topic created again since they were
    counted (`current` incarnation differs from `recorded`) or `deleted` has lost whatever was
    not read yet: with failOnDataLoss the query fails naming it (Spark's source reports both as
    data loss), else its positions are dropped with a WARNING and its partitions start over."""
    recreated = {t: (recorded[t], e) for t, e in current.items() if t in recorded and recorded[t] != e}
    lost = [
        f"topic {t} was deleted and created again (incarnation {new}, was {old})"
        for t, (old, new) in sorted(recreated.items())
    ]
    lost += [f"topic {t} was deleted" for t in sorted(deleted)]
    if lost and fail_on_data_loss:
        raise DataLossError(
            f"{'; '.join(lost)}: the query's positions in it are gone and some data may have been missed "
            "(as Spark's source reports). Set failOnDataLoss=false to drop them and read the topic over "
            "from its new start when it exists again"
        )
    for what in lost:
        log.warning("%s: its positions are dropped; its partitions start over (failOnDataLoss=false)", what)
    gone = set(recreated) | deleted
    return {k: v for k, v in before.items() if k[0] not in gone}


def replayed_ranges(
    ranges: list[tuple[Key, int, int]],
    recorded: Mapping[str, int],
    now: Mapping[str, int | None],
    *,
    fail_on_data_loss: bool,
) -> list[Any]:
    """A batch replayed from the checkpoint, against the topics' incarnations `now`: ranges of a
    topic deleted or created again since are not read at those offsets (they would name other
    messages of the new log): the query fails (failOnDataLoss) or skips them."""
    kept, stale = split_stale(ranges, recorded, now)
    if stale:
        what = "; ".join(s.describe() for s in stale)
        if fail_on_data_loss:
            raise DataLossError(
                f"replaying a batch from the checkpoint: {what}. Its offsets belong to the old topic and "
                "are gone. Set failOnDataLoss=false to skip them (the topic is then read from its new "
                "start), or start the query with a new checkpoint location"
            )
        log.warning("replaying a batch from the checkpoint: %s; skipping its ranges (failOnDataLoss=false)", what)
    return kept
