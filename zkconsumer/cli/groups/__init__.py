"""`zkconsumer groups`: one module per verb (list, describe, delete, rebalance, status), thin over zkconsumer.admin."""

from __future__ import annotations

import click

from zkconsumer.cli.groups.delete import delete
from zkconsumer.cli.groups.describe import describe
from zkconsumer.cli.groups.list import list_groups
from zkconsumer.cli.groups.rebalance import rebalance
from zkconsumer.cli.groups.status import status


@click.group("groups")
def groups() -> None:
    """List, describe, delete and rebalance consumer groups kept in ZooKeeper (/consumers/<group>).

    \b
    Examples:
      zkconsumer groups list --zookeeper zk:2181/kafka
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --members
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing --execute
      zkconsumer groups rebalance --zookeeper zk:2181/kafka --group billing --execute
    """


for _command in (list_groups, describe, delete, rebalance, status):
    groups.add_command(_command)
