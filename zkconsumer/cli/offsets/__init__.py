"""`zkconsumer offsets`: one module per verb (export, import, reset), thin over zkconsumer.admin."""

from __future__ import annotations

import click

from zkconsumer.cli.lazy_group import LazyGroup

# verb -> "module:attribute": `offsets reset` imports reset's module, not export's or import's.
VERBS = {
    "export": "zkconsumer.cli.offsets.export:export",
    "import": "zkconsumer.cli.offsets.import_:import_",
    "reset": "zkconsumer.cli.offsets.reset:reset",
}


@click.group("offsets", cls=LazyGroup, lazy=VERBS)
def offsets() -> None:
    """Export, import and reset committed offsets (/consumers/<group>/offsets/<topic>/<partition>).

    Import and reset check every row against the cluster first (the topic and partition exist, the
    new offset lies in [log start, log end]; --clamp moves it into the log instead) and write
    nothing if one is bad. They only print their plan unless given --execute, refuse groups with
    live members unless given --force, and never overwrite the offset of a partition that has an
    owner node.

    \b
    KAFKA-SIDE OFFSETS: members with offsets.storage=kafka (dual commit by default) resume from
    the larger of their ZooKeeper and Kafka offsets, so a ZooKeeper-only write would be ignored.
    Import and reset therefore ask the brokers whether the group holds offsets in Kafka for the
    topic; if it does, every new offset is written to ZooKeeper (guarded) and then to Kafka.
    When the brokers cannot be asked, they stop; --zookeeper-only skips the question for groups
    known to keep offsets in ZooKeeper only.

    \b
    Examples:
      zkconsumer offsets export --zookeeper zk:2181/kafka --group billing --output billing.offsets
      zkconsumer offsets import --zookeeper zk:2181/kafka --input billing.offsets --execute
      zkconsumer offsets reset --zookeeper zk:2181/kafka --group billing --topic orders --to-earliest
    """
