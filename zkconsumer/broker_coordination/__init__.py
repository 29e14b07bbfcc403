"""Broker coordination (zkconsumer.coordination=broker): the connector's API over the brokers' group coordinator."""

from zkconsumer.broker_coordination.bootstrap import bootstrap_servers_for
from zkconsumer.broker_coordination.member import BrokerGroupMember

__all__ = ["BrokerGroupMember", "bootstrap_servers_for"]
