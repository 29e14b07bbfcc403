"""Test your own zkconsumer code against a real local ZooKeeper + Kafka cluster (like kazoo.testing).

Public surface:

* ``zkconsumer.testing.cluster.LocalCluster``: a real ZooKeeper plus 1..N ZooKeeper-mode Kafka
  brokers run as child JVMs on loopback (Kafka 3.9.1 unless ``kafka_version`` asks for another
  ZooKeeper-era release; jars are fetched with Maven (mvn on the PATH) on first use, or found in ZKCONSUMER_JARS)::

      from zkconsumer.testing.cluster import LocalCluster

      with LocalCluster(brokers=1, chroot="/kafka") as cluster:
          cluster.create_topic("orders", partitions=8)
          print(cluster.zookeeper_connect, cluster.bootstrap_servers)

  ``ExternalCluster`` names a cluster somebody else runs; ``zkconsumer.testing.kafka`` produces
  numbered messages and creates topics; ``python -m zkconsumer.testing up|status|down`` keeps a
  local cluster running from a shell.
* A pytest plugin, ``zkconsumer.testing.pytest_plugin``, opt-in: ``pytest -p
  zkconsumer.testing.pytest_plugin`` or ``pytest_plugins = ["zkconsumer.testing.pytest_plugin"]``
  in a conftest.py (no ``pytest11`` entry point; ``pip install 'zkconsumer[testing]'`` brings pytest).
  Its fixtures: ``cluster`` (session-wide), ``zk`` (a started kazoo client inside the cluster's
  chroot), ``topic_factory`` (``make_topic(partitions=1, replication_factor=1, name=None)``),
  ``produce`` (``produce(topic, count, ...)`` -> the acknowledged messages) and ``group_id`` (a
  group name no other test uses). The environment picks the cluster: ZKCONSUMER_CLUSTER ``local``
  (default), ``docker`` (compose.yaml of a source checkout, through testcontainers) or ``external``
  (ZKCONSUMER_ZOOKEEPER and ZKCONSUMER_BOOTSTRAP name it); ZKCONSUMER_KAFKA_VERSION and
  ZKCONSUMER_ZOOKEEPER_VERSION choose a local cluster's releases. A cluster that cannot start fails
  the tests that need it, with the JVM log tail; it never skips them.

Importing this package, or ``zkconsumer.testing.cluster``, needs no pytest: only the plugin does.
The project's own harness (chaos tests, the Scala member, the ZooKeeper model) lives in its
source tree under tests/harness and is not shipped.
"""

from zkconsumer.testing import program_log

# scripts/test.sh sets ZKCONSUMER_PROGRAM_LOG: every process of the suite that uses the test kit records
# the system programs it starts, and the run fails if one of them is never installed (program_log.py).
program_log.install()
