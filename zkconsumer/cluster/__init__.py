"""Broker metadata: the brokers' and topics' znodes, read from ZooKeeper."""
