"""A real ZooKeeper (one server or an ensemble) plus 1..N ZooKeeper-mode Kafka brokers run as child JVMs."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkconsumer.testing.ensemble import ZooKeeperEnsemble
from zkconsumer.testing.nodes import LOOPBACK, KafkaBroker, KerberosServer, Lab, ZooKeeperNode
from zkconsumer.testing.probes import ClusterStartError, connect_zk, wait_until
from zkconsumer.testing.secure import BrokerSecurity
from zkconsumer.testing.versions import DEFAULT_KAFKA, kafka_release, zookeeper_release

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

# Small heaps and a quick-start JIT: three brokers and ZooKeeper fit 2 cores. Benchmarks pass
# SERVER_JVM_OPTS instead, so the broker is not the bottleneck being measured.
TEST_JVM_OPTS = ("-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SERVER_JVM_OPTS = ("-Xms768m", "-Xmx768m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")

LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.zookeeper=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.kafka.controller=WARN
"""


class LocalCluster:
    """ZooKeeper (`zookeeper_servers` of them: 1, or an ensemble of 3 or 5) + `brokers` Kafka brokers.

    `kafka_version` picks the broker release (see versions.KAFKA: 0.10.2.2 .. 3.9.1) and
    `zookeeper_version` the ZooKeeper server (3.4.14, 3.5.10, 3.8; None: the one the broker's
    jars bundle). A version's jars are fetched with Maven the first time it is used.
    `zookeeper_sasl_users` (user -> password): ZooKeeper takes SASL DIGEST-MD5 logins (brokers do not log in);
    `zookeeper_kerberos`: it takes GSSAPI logins of that KDC's realm instead.

    Example::

        with LocalCluster(brokers=1, chroot="/kafka", kafka_version="1.1.1", zookeeper_version="3.4.14") as cluster:
            cluster.create_topic("orders", partitions=8)
            print(cluster.zookeeper_connect, cluster.bootstrap_servers)

    Every JVM logs into `workdir` (kept on failure for post-mortems, removed by stop() when
    the cluster made the folder itself and `keep_logs` is false).

    A production-like cluster: ``LocalCluster(zookeeper_servers=3, brokers=3)`` runs a 3-server
    ensemble (ensemble.ZooKeeperEnsemble; `zookeeper_settings` adds zoo.cfg lines) and brokers
    whose topics are replicated: `replication_factor` defaults to min(3, brokers) when there is an
    ensemble and to 1 otherwise (the default cluster is unchanged), `min_insync_replicas` to 2 for
    a factor of 3 or more and 1 below. Both become the brokers' defaults (also for the offsets and
    transaction topics) and `create_topic`'s. Producers of the test helpers use acks=all.

    `lab` (a netlab.NetLab) runs every server in a network namespace of its own (hosts "zk1"..,
    "kafka0"..) on its own lab address, so that netfaults can cut, drop and slow its links;
    without it everything listens on 127.0.0.1.
    """

    def __init__(
        self,
        brokers: int = 1,
        *,
        chroot: str | None = "/kafka",
        workdir: Path | None = None,
        jvm_opts: tuple[str, ...] = TEST_JVM_OPTS,
        broker_properties: dict[str, str] | None = None,
        keep_logs: bool = False,
        kafka_version: str = DEFAULT_KAFKA,
        zookeeper_version: str | None = None,
        security: BrokerSecurity | None = None,
        zookeeper_sasl_users: Mapping[str, str] | None = None,
        zookeeper_kerberos: KerberosServer | None = None,
        zookeeper_servers: int = 1,
        zookeeper_settings: Mapping[str, str] | None = None,
        replication_factor: int | None = None,
        min_insync_replicas: int | None = None,
        lab: Lab | None = None,
    ) -> None:
        self.kafka = kafka_release(kafka_version)
        self.security = security
        self.zookeeper_release = zookeeper_release(zookeeper_version, self.kafka)
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if zookeeper_servers < 1 or zookeeper_servers % 2 == 0:
            raise ValueError(f"zookeeper_servers must be odd (1, 3, 5), got {zookeeper_servers}")
        if lab is not None and zookeeper_kerberos is not None:
            raise ValueError("a Kerberos ZooKeeper is zookeeper/localhost: it cannot run in a lab")
        self.replication_factor = replication_factor or (min(3, brokers) if zookeeper_servers > 1 else 1)
        if not 1 <= self.replication_factor <= brokers:
            raise ValueError(f"replication_factor {self.replication_factor} needs as many brokers, got {brokers}")
        self.min_insync_replicas = min_insync_replicas or (2 if self.replication_factor >= 3 else 1)
        self.lab = lab
        if chroot is not None and (not chroot.startswith("/") or chroot.endswith("/")):
            raise ValueError(f"chroot must look like /name, got {chroot!r}")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="zkconsumer-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j.properties").write_text(LOG4J)
        self.keep_logs = keep_logs
        self.chroot = chroot
        self.ensemble = ZooKeeperEnsemble(
            self.workdir,
            zookeeper_servers,
            release=self.zookeeper_release,
            broker_jars=self.kafka.jar_set,
            sasl_users=zookeeper_sasl_users,
            kerberos=zookeeper_kerberos,
            places=[lab.host(f"zk{i}") for i in range(1, zookeeper_servers + 1)] if lab else None,
            settings=zookeeper_settings,
        )
        self.zookeepers: list[ZooKeeperNode] = self.ensemble.servers
        self.zookeeper = self.zookeepers[0]  # the only server of a standalone cluster
        properties = {
            **self._replication_properties(),
            **(security.broker_properties() if security else {}),
            **(broker_properties or {}),
        }
        self.brokers = [
            KafkaBroker(
                i,
                self.workdir,
                self.zookeeper_connect,
                jvm_opts,
                properties,
                self.kafka,
                security.listeners if security else (),
                place=lab.host(f"kafka{i}") if lab else LOOPBACK,
            )
            for i in range(brokers)
        ]
        self.start_seconds: float | None = None

    def _replication_properties(self) -> dict[str, str]:
        """Broker defaults for replicated topics (none for a factor of 1: BROKER_PROPERTIES has those)."""
        if self.replication_factor == 1:
            return {}
        rf, isr = str(self.replication_factor), str(self.min_insync_replicas)
        return {
            "default.replication.factor": rf,
            "min.insync.replicas": isr,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "unclean.leader.election.enable": "false",
        }

    # ---- addresses -------------------------------------------------------------------------
    @property
    def zookeeper_hosts(self) -> str:
        """host:port,... of every ZooKeeper server, without the chroot (for kazoo admin work)."""
        return self.ensemble.hosts

    @property
    def zookeeper_connect(self) -> str:
        """The zookeeper.connect value clients use: every server's host:port plus the chroot."""
        return self.ensemble.hosts + (self.chroot or "")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def listener_bootstrap(self, listener: str) -> str:
        """host:port,... of every broker's `listener` (PLAINTEXT, or one of the security's)."""
        return ",".join(f"{b.place.address}:{b.listener_ports[listener]}" for b in self.brokers)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 120.0, *, detach: bool = False) -> LocalCluster:
        """Start ZooKeeper (every server, until each serves), then the brokers; return once
        clients can use every broker."""
        from zkconsumer.testing.kafka import register_brokers

        began = time.monotonic()
        register_brokers([b.address for b in self.brokers], self.kafka.client_settings())
        try:
            self.ensemble.start(timeout, detach=detach)
            for broker in self.brokers:
                broker.process.start(detach=detach)
            for broker in self.brokers:
                self.wait_broker_registered(broker, timeout)
            if len(self.brokers) > 1:
                self._wait_controller(timeout)
            self.wait_metadata(timeout)
            if self.security is not None:
                self.security.create_scram_users(self.bootstrap_servers)
        except BaseException:
            self.stop(keep_logs=True)
            raise
        self.start_seconds = time.monotonic() - began
        log.info(
            "cluster up in %.1fs: zookeeper.connect=%s bootstrap=%s",
            self.start_seconds,
            self.zookeeper_connect,
            self.bootstrap_servers,
        )
        return self

    def stop(self, *, keep_logs: bool | None = None) -> None:
        """Brokers first (without ZooKeeper their shutdown hangs), then ZooKeeper."""
        from zkconsumer.testing.kafka import register_brokers

        quorum = self.ensemble.quorum_running()
        for broker in self.brokers:
            broker.kill() if not quorum else broker.stop()
        self.ensemble.stop()
        register_brokers([b.address for b in self.brokers], {})
        keep = self.keep_logs if keep_logs is None else keep_logs
        if self._own_workdir and not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(keep_logs=self.keep_logs or exc[0] is not None)

    # ---- per-process control for fault tests ----------------------------------------------
    def restart_broker(self, broker_id: int, timeout: float = 120.0) -> None:
        """Start a stopped or killed broker again (same port and data) and wait until registered."""
        broker = self.brokers[broker_id]
        if broker.process.running:
            broker.stop()
        # A kill -9'd broker's ephemeral node lingers until its session expires (6 s).
        self._wait_path_gone(f"/brokers/ids/{broker_id}", timeout)
        for attempt in range(1, 4):
            broker.process.start()
            try:
                self.wait_broker_registered(broker, timeout)
                self.wait_metadata(timeout)
                return
            except ClusterStartError:
                # On a starved machine a starting broker can lose its own ZooKeeper session and exit
                # ("fatal exception during startup"), or hang in that state: start it again, as an
                # operator would.
                if attempt == 3:
                    raise
                state = "hung" if broker.process.running else "exited"
                log.warning("kafka-%d %s while starting (attempt %d); starting it again", broker_id, state, attempt)
                if broker.process.running:
                    broker.process.kill()
                self._wait_path_gone(f"/brokers/ids/{broker_id}", timeout)

    def wait_metadata(self, timeout: float = 60.0) -> None:
        """Until a client sees every running broker and a controller (registration precedes listening)."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        quiet = logging.getLogger("zkconsumer.testing.librdkafka")  # refused connects are expected here
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, "logger": quiet}  # hints omit Logger
        client = AdminClient({**config, **self.kafka.client_settings()})
        expected = {b.broker_id for b in self.brokers if b.process.running}

        def ready() -> bool:
            try:
                meta = client.list_topics(timeout=5)
            except KafkaException as exc:
                # 0.8.2 before its first topic: an answer naming no broker (librdkafka: _PARTIAL) is all it gives
                answered = exc.args[0].code() == KafkaError._PARTIAL and not self.kafka.brokers_before_topics
                return answered and self._zk_exists("/controller")
            except Exception:  # noqa: BLE001 - any failure just means "not yet"
                return False
            if not self.kafka.controller_in_metadata:  # Metadata v0: the controller is only in ZooKeeper
                return set(meta.brokers) >= expected and self._zk_exists("/controller")
            return set(meta.brokers) >= expected and meta.controller_id >= 0

        wait_until(ready, timeout, "serving metadata with a controller", self.brokers[0].process)

    def restart_zookeeper(self, timeout: float = 60.0, *, server: int | None = None) -> None:
        """Stop and start ZooKeeper on the same ports and data: every server, or the one with myid
        `server`; returns once it serves again (sessions survive if within their timeout)."""
        if server is not None:
            self.ensemble.restart_server(server, timeout)
        elif self.ensemble.is_ensemble:
            self.ensemble.restart(timeout)
        else:
            self.zookeeper.restart(timeout)

    def stop_zookeeper(self, server: int) -> None:
        """SIGTERM one ZooKeeper server (myid `server`; 1 for a standalone one)."""
        self.ensemble.stop_server(server)

    def kill_zookeeper(self, server: int) -> None:
        """kill -9 one ZooKeeper server."""
        self.ensemble.kill_server(server)

    def start_zookeeper(self, server: int, timeout: float = 60.0) -> None:
        """Start a stopped or killed ZooKeeper server again; return once it serves."""
        self.ensemble.start_server(server, timeout)

    def zookeeper_leader(self, timeout: float = 60.0, *, not_server: int | None = None) -> ZooKeeperNode:
        """The server a majority follows (asked with `srvr`), waiting up to `timeout` for one
        (other than `not_server`, e.g. right after killing the old leader)."""
        return self.ensemble.wait_leader(timeout, not_server=not_server)

    def partition_leader(self, topic: str, partition: int) -> int:
        """The broker id leading `partition`, from /brokers/topics/<t>/partitions/<p>/state (-1: none)."""
        client = self.zk_client()
        try:
            data, _ = client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        finally:
            client.stop()
            client.close()
        leader: int = json.loads(data)["leader"]
        return leader

    def kill_partition_leader(self, topic: str, partition: int) -> int:
        """kill -9 the broker leading `partition`; returns its id (restart it with restart_broker)."""
        leader = self.partition_leader(topic, partition)
        if leader < 0:
            raise ClusterStartError(f"{topic}-{partition} has no leader to kill")
        self.brokers[leader].kill()
        return leader

    def wait_broker_registered(self, broker: KafkaBroker, timeout: float) -> None:
        path = f"/brokers/ids/{broker.broker_id}"
        wait_until(lambda: self._zk_exists(path), timeout, f"registered at {path}", broker.process)

    def log_tails(self, lines: int = 30) -> str:
        procs = [z.process for z in self.zookeepers] + [b.process for b in self.brokers]
        return "\n".join(f"--- {p.name} ({p.log_path}) ---\n{p.log_tail(lines)}" for p in procs)

    # ---- ZooKeeper access (through the chroot) ---------------------------------------------
    def zk_client(self, **kwargs: object) -> KazooClient:
        return connect_zk(self.zookeeper_connect, **kwargs)

    def _zk_exists(self, path: str) -> bool:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            client = self.zk_client()
        except (KazooException, KazooTimeoutError):
            return False
        try:
            return client.exists(path) is not None
        except (KazooException, KazooTimeoutError):  # a starved ZooKeeper dropped us: look again
            return False
        finally:
            client.stop()
            client.close()

    def _wait_controller(self, timeout: float) -> None:
        wait_until(lambda: self._zk_exists("/controller"), timeout, "electing a controller", self.brokers[0].process)

    def _wait_path_gone(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._zk_exists(path):
            if time.monotonic() > deadline:
                raise ClusterStartError(f"{path} still present after {timeout:.0f}s")
            time.sleep(0.25)

    # ---- topics ----------------------------------------------------------------------------
    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int | None = None, timeout: float = 60.0
    ) -> None:
        """Create a topic (replicated as the cluster's default when `replication_factor` is None) and
        wait until every partition has a leader and, when replicated, min.insync.replicas in sync."""
        from zkconsumer.testing.kafka import create_topic, wait_for_leaders, write_topic

        factor = replication_factor or self.replication_factor
        min_isr = min(factor, self.min_insync_replicas)
        if self.kafka.admin_requests:
            create_topic(self.bootstrap_servers, name, partitions, factor, timeout, min_isr=min_isr)
            return
        client = self.zk_client()
        try:
            write_topic(client, name, partitions, [b.broker_id for b in self.brokers], factor)
        finally:
            client.stop()
            client.close()
        wait_for_leaders(self.bootstrap_servers, name, partitions, timeout, min_isr=min_isr)
