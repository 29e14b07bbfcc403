"""`zkconsumer exporter`: every ZooKeeper group's lag and ownership as Prometheus metrics and a JSON API."""
