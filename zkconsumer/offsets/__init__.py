"""Committed offsets: ZooKeeper, Kafka and dual commit."""
