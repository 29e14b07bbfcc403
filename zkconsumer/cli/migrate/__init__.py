"""`zkconsumer migrate`: the command group and its help (the sequences, the safety rules, exit statuses); one module per verb (plan, offsets, switch)."""

from __future__ import annotations

import click

from zkconsumer.cli.lazy_group import LazyGroup

HELP = """Move a group off ZooKeeper coordination onto the brokers' (or back), offsets included.

ZooKeeper-coordinated members (Scala 0.8-1.1, zkconsumer) keep offsets under
/consumers/<group>/offsets; broker-coordinated consumers (the Java KafkaConsumer, confluent-kafka
subscribe()) keep them with the group coordinator. `migrate plan` shows both sides and what a
copy would do; `migrate offsets` copies the committed offsets of a group id from one store to
the other. The sequence:

\b
STOP-AND-COPY (the group pauses for the copy):
  1. zkconsumer migrate plan -g G               # both sides, lag, blockers
  2. stop every ZooKeeper member; each commits its final offsets on a clean
     shutdown (Scala and zkconsumer alike)
  3. zkconsumer migrate offsets -g G --to kafka             # the plan, no write
     zkconsumer migrate offsets -g G --to kafka --execute   # copy, read back
  4. start the broker-coordinated consumers (confluent-kafka subscribe(),
     group.id=G): they resume at the copied offsets

\b
ROLLING (the group consumes until the switch):
  1. restart the ZooKeeper members one at a time with offsets.storage=kafka
     and dual.commit.enabled=true: they commit to both stores and resume from
     the larger (plan shows step dual-commit-live)
  2. stop the ZooKeeper group; the final commits reach both stores
  3. zkconsumer migrate offsets -g G --to kafka --execute   # copies what
     differs (often nothing: step copied) and verifies
  4. start the broker-coordinated consumers
  Never run both kinds at once (step mixed): each consumes every partition,
  and the broker rejects the dual-commit members' Kafka commits
  (UNKNOWN_MEMBER_ID).

\b
ROLLBACK: stop the broker-coordinated consumers (the broker group must be
  Empty), zkconsumer migrate offsets -g G --to zookeeper --execute, then start
  the ZooKeeper members (offsets.storage=zookeeper, or dual commit).

\b
SAFETY: `migrate offsets` only prints its plan unless given --execute. It
  refuses while the target side has live members or the source side still
  runs (ZooKeeper: registered members, owner nodes, a Spark ingest job;
  brokers: a group that is not Empty) unless told exactly what to override
  (--force-live-target, --force-live-source). It never moves an offset
  backwards from what the target held when it read it, without
  --allow-rewind. Source offsets before the log start are clamped up to it
  (those messages are gone); those beyond the log end are refused unless
  --clamp-to-log-end. Partitions only the source has are copied; those only
  the target has are kept and reported. Partitions whose log offsets the
  brokers do not give, and undecodable ZooKeeper offset nodes to copy, fail
  the command. ZooKeeper writes
  never race a partition owner; Kafka writes are admin commits, which brokers
  accept only for a group with no members. Every write is read back, and
  running it again after a copy writes nothing.

Exit status: 0 no blocker (and, with --execute, everything read back as written), 1 a write
failed or did not read back (every such partition is named) or another error, 2 a usage error,
3 blocked: a blocker for the asked direction, nothing written.

The guide, with the duplicate bound measured for each path: docs/migration.md.
"""


# verb -> "module:attribute", imported only when that verb runs (or a listing shows its help).
VERBS = {
    "offsets": "zkconsumer.cli.migrate.offsets:offsets",
    "plan": "zkconsumer.cli.migrate.plan:plan",
    "switch": "zkconsumer.cli.migrate.switch:switch",
}


@click.group("migrate", help=HELP, cls=LazyGroup, lazy=VERBS)
def migrate() -> None:
    """Move a group between ZooKeeper and broker coordination (the help is HELP)."""
