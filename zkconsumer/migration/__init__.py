"""Moving a group's offsets between ZooKeeper and the broker coordinator (pure planning)."""
