"""The directions of a migration and the per-partition actions of its plan (WRITING ones put the new offset into the target store)."""

from __future__ import annotations

TO_KAFKA, TO_ZOOKEEPER = "kafka", "zookeeper"
DIRECTIONS = (TO_KAFKA, TO_ZOOKEEPER)

# Per-partition actions. WRITING ones put `new` into the target store.
COPY = "copy"  # source ahead of target
SOURCE_ONLY = "source-only"  # target has no offset: copied
CLAMP = "clamp"  # source outside the log: the clamped value is copied
REWIND = "rewind"  # source behind target, --allow-rewind given
EQUAL = "already-equal"
TARGET_ONLY = "target-only-keep"  # nothing to copy: the target's offset stays, reported
REFUSE_REWIND = "refuse-rewind"  # source behind target: never without --allow-rewind
REFUSE_OUT_OF_RANGE = "refuse-out-of-range"  # source beyond the log end, no --clamp-to-log-end
REFUSE_OWNED = "refuse-owned"  # ZooKeeper target partition has an owner node: never raced
UNKNOWN_PARTITION = "skip-unknown-partition"  # the brokers have no such partition (topic deleted?)
NO_OFFSET = "no-offset-either-side"  # a partition of the topics with no offset in either store
WRITING = frozenset({COPY, SOURCE_ONLY, CLAMP, REWIND})
