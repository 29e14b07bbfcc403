"""`zkconsumer groups`: one module per verb (list, describe, delete, rebalance, status), thin over zkconsumer.admin."""

from __future__ import annotations

import click

from zkconsumer.cli.lazy_group import LazyGroup

# verb -> "module:attribute": `groups describe` imports describe's module, not the other verbs'.
VERBS = {
    "delete": "zkconsumer.cli.groups.delete:delete",
    "describe": "zkconsumer.cli.groups.describe:describe",
    "list": "zkconsumer.cli.groups.list:list_groups",
    "rebalance": "zkconsumer.cli.groups.rebalance:rebalance",
    "status": "zkconsumer.cli.groups.status:status",
}


@click.group("groups", cls=LazyGroup, lazy=VERBS)
def groups() -> None:
    """List, describe, delete and rebalance consumer groups kept in ZooKeeper (/consumers/<group>).

    \b
    Examples:
      zkconsumer groups list --zookeeper zk:2181/kafka
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --members
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing --execute
      zkconsumer groups rebalance --zookeeper zk:2181/kafka --group billing --execute
    """
