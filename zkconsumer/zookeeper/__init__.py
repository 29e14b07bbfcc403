"""The ZooKeeper adapter: the kazoo client and its handler, znode codecs, watch caches, transactions, the group's fenced reads and writes."""
