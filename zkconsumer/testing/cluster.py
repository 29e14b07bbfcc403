"""A real ZooKeeper plus 1..N ZooKeeper-mode Kafka brokers (3.9.1 unless asked) run as child JVMs on loopback."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zkconsumer.testing.jars import classpath
from zkconsumer.testing.process import JavaProcess
from zkconsumer.testing.secure import BrokerSecurity, zookeeper_sasl_server

if TYPE_CHECKING:
    from kazoo.client import KazooClient

from zkconsumer.testing.versions import DEFAULT_KAFKA, KafkaRelease, ZooKeeperRelease, kafka_release, zookeeper_release


class KerberosServer(Protocol):
    """A KDC a Kerberos ZooKeeper server logs in to (the project's tests run MIT krb5: tests/harness/kdc.py)."""

    def zookeeper_server(self, workdir: Path) -> tuple[str, list[str]]:
        """(zoo.cfg lines, JVM flags) that make the server in `workdir` take GSSAPI logins of this realm."""
        ...


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

# Kafka's own integration-test settings, tuned for fast failover (docs/design.md, "the test cluster").
BROKER_PROPERTIES = """\
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
log.cleaner.dedupe.buffer.size=2097152
log.initial.task.delay.ms=100
log.delete.delay.ms=1000
controlled.shutdown.enable=false
num.network.threads=2
num.io.threads=4
background.threads=2
num.recovery.threads.per.data.dir=1
replica.socket.timeout.ms=1500
controller.socket.timeout.ms=1500
zookeeper.connection.timeout.ms=10000
zookeeper.session.timeout.ms=6000
"""


class ClusterStartError(RuntimeError):
    """A JVM did not become ready; the message carries its log tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def zookeeper_ruok(port: int, timeout: float = 1.0) -> bool:
    """True when the ZooKeeper server on port answers the `ruok` four-letter word."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def four_letter_word(port: int, word: str, timeout: float = 2.0) -> str | None:
    """The server's whole answer to a four-letter word (srvr, mntr, ...); None if it did not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
    except OSError:
        return None
    return answer.decode(errors="replace")


def zookeeper_version(port: int, timeout: float = 2.0) -> str | None:
    """The server's version from `srvr` ("3.4.14-4c25d480..., built on ..." -> "3.4.14"); None if no answer."""
    answer = four_letter_word(port, "srvr", timeout)
    first = (answer or "").partition("\n")[0]  # "Zookeeper version: 3.4.14-..."
    return first.partition(":")[2].strip().split("-")[0].split(",")[0] or None


def wait_until(check: Callable[[], bool], timeout: float, what: str, proc: JavaProcess) -> None:
    """Poll check() until true; fail fast with the log tail if proc died or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not proc.running:
            raise ClusterStartError(
                f"{proc.name} exited with code {proc.exit_code} before {what}; "
                f"log tail ({proc.log_path}):\n{proc.log_tail()}"
            )
        time.sleep(0.2)
    raise ClusterStartError(
        f"{proc.name} not ready after {timeout:.0f}s ({what}); log tail ({proc.log_path}):\n{proc.log_tail()}"
    )


def connect_zk(hosts: str, **kwargs: object) -> KazooClient:
    """A started kazoo client with bounded retries (kazoo's defaults retry forever)."""
    from kazoo.client import KazooClient

    with warnings.catch_warnings():  # a chroot appears only once a broker has started
        warnings.filterwarnings("ignore", "No chroot path exists")
        settings: dict[str, object] = {"timeout": 10.0, "command_retry": {"max_tries": 5, "deadline": 20}}
        client = KazooClient(hosts=hosts, **{**settings, **kwargs})
        client.start(timeout=15)
    return client


class ZooKeeperNode:
    """A standalone ZooKeeper server with a fixed port: by default the one inside the Kafka 3.9 jars.

    `broker_jars` is the jar set to run when `release.jar_set` is None (a broker's bundled server).
    `sasl_users` (user -> password) enables SASL DIGEST-MD5 authentication (secure.zookeeper_sasl_server);
    `kerberos` GSSAPI instead: the server is zookeeper/localhost in that KDC's realm and clients
    reach it as localhost:<port>.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        release: ZooKeeperRelease | None = None,
        broker_jars: str = "kafka39",
        sasl_users: Mapping[str, str] | None = None,
        kerberos: KerberosServer | None = None,
    ) -> None:
        if sasl_users and kerberos is not None:
            raise ValueError("a ZooKeeper server takes one SASL mechanism: DIGEST-MD5 users or Kerberos")
        self.release = release or zookeeper_release(None, kafka_release(DEFAULT_KAFKA))
        self.port = port or free_port()
        self.workdir = workdir
        self.data_dir = workdir / "zookeeper-data"
        self.host = "localhost" if kerberos is not None else "127.0.0.1"
        cfg = workdir / "zoo.cfg"
        if kerberos is not None:
            sasl_cfg, sasl_flags = kerberos.zookeeper_server(workdir)
        else:
            sasl_cfg, sasl_flags = zookeeper_sasl_server(workdir, sasl_users) if sasl_users else ("", [])
        # tickTime 500 => sessions as short as 1 s, so expiry tests are quick. maxSessionTimeout is
        # raised from 20 ticks (10 s) so a broker's own 30 s session (--cpu-hog) is not cut to 10 s:
        # a broker JVM starting on a starved machine lost its session while starting up.
        # forceSync=no: under a CPU hog with a broker recovering its logs, fsyncs of the write-ahead
        # log took up to 10 s and stalled every write until sessions expired. A restarted server
        # still finds everything (the page cache survives a process); only a machine crash would not.
        cfg.write_text(
            f"tickTime=500\nmaxSessionTimeout=60000\ndataDir={self.data_dir}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\nforceSync=no\n"
            "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons\n" + sasl_cfg
        )
        log4j = workdir / "log4j.properties"
        self.process = JavaProcess(
            "zookeeper",
            [
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dlog4j.configuration=file:{log4j}",
                "-Dzookeeper.admin.enableServer=false",
                *sasl_flags,
                "-cp",
                classpath(self.release.jar_set or broker_jars),
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(cfg),
            ],
            log_path=workdir / "zookeeper.log",
        )

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        self.process.start()
        wait_until(lambda: zookeeper_ruok(self.port), timeout, "answering ruok", self.process)

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def restart(self, timeout: float = 60.0) -> None:
        """Stop and start on the same port and data: sessions survive if within their timeout."""
        self.stop()
        self.start(timeout)


class KafkaBroker:
    """One ZooKeeper-mode broker with a PLAINTEXT loopback listener on a fixed port."""

    def __init__(
        self,
        broker_id: int,
        workdir: Path,
        zookeeper_connect: str,
        jvm_opts: tuple[str, ...],
        extra_properties: dict[str, str],
        release: KafkaRelease | None = None,
        extra_listeners: tuple[str, ...] = (),
    ) -> None:
        self.release = release or kafka_release(DEFAULT_KAFKA)
        self.broker_id = broker_id
        self.port = free_port()
        # Listeners named after their protocol (SSL, SASL_SSL), on ports of their own.
        self.listener_ports = {"PLAINTEXT": self.port, **{name: free_port() for name in extra_listeners}}
        self.log_dir = workdir / f"kafka-{broker_id}-data"
        props = workdir / f"server-{broker_id}.properties"
        extra = "".join(f"{k}={v}\n" for k, v in extra_properties.items())
        listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in self.listener_ports.items())
        props.write_text(
            BROKER_PROPERTIES + extra + f"broker.id={broker_id}\n"
            f"listeners={listeners}\nlog.dirs={self.log_dir}\n"
            f"zookeeper.connect={zookeeper_connect}\n"
        )
        self.process = JavaProcess(
            f"kafka-{broker_id}",
            [
                *jvm_opts,
                f"-Dlog4j.configuration=file:{workdir / 'log4j.properties'}",
                f"-Dkafka.logs.dir={workdir}",
                "-cp",
                classpath(self.release.jar_set),
                "kafka.Kafka",
                str(props),
            ],
            log_path=workdir / f"kafka-{broker_id}.log",
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()


class LocalCluster:
    """ZooKeeper + `brokers` Kafka brokers on free loopback ports.

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
    ) -> None:
        self.kafka = kafka_release(kafka_version)
        self.security = security
        self.zookeeper_release = zookeeper_release(zookeeper_version, self.kafka)
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if chroot is not None and (not chroot.startswith("/") or chroot.endswith("/")):
            raise ValueError(f"chroot must look like /name, got {chroot!r}")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="zkconsumer-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j.properties").write_text(LOG4J)
        self.keep_logs = keep_logs
        self.chroot = chroot
        self.zookeeper = ZooKeeperNode(
            self.workdir,
            release=self.zookeeper_release,
            broker_jars=self.kafka.jar_set,
            sasl_users=zookeeper_sasl_users,
            kerberos=zookeeper_kerberos,
        )
        properties = {**(security.broker_properties() if security else {}), **(broker_properties or {})}
        self.brokers = [
            KafkaBroker(
                i,
                self.workdir,
                self.zookeeper_connect,
                jvm_opts,
                properties,
                self.kafka,
                security.listeners if security else (),
            )
            for i in range(brokers)
        ]
        self.start_seconds: float | None = None

    # ---- addresses -------------------------------------------------------------------------
    @property
    def zookeeper_hosts(self) -> str:
        """host:port without the chroot (for kazoo admin work on the whole server)."""
        return self.zookeeper.hosts

    @property
    def zookeeper_connect(self) -> str:
        """The zookeeper.connect value clients use: host:port plus the chroot."""
        return self.zookeeper.hosts + (self.chroot or "")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def listener_bootstrap(self, listener: str) -> str:
        """host:port,... of every broker's `listener` (PLAINTEXT, or one of the security's)."""
        return ",".join(f"127.0.0.1:{b.listener_ports[listener]}" for b in self.brokers)

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 120.0, *, detach: bool = False) -> LocalCluster:
        """Start ZooKeeper, then the brokers; return once clients can use every broker."""
        began = time.monotonic()
        try:
            self.zookeeper.process.start(detach=detach)
            wait_until(lambda: zookeeper_ruok(self.zookeeper.port), timeout, "answering ruok", self.zookeeper.process)
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
        for broker in self.brokers:
            broker.kill() if not self.zookeeper.process.running else broker.stop()
        self.zookeeper.stop()
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
        from confluent_kafka.admin import AdminClient

        quiet = logging.getLogger("zkconsumer.testing.librdkafka")  # refused connects are expected here
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, "logger": quiet}  # hints omit Logger
        client = AdminClient(config)
        expected = {b.broker_id for b in self.brokers if b.process.running}

        def ready() -> bool:
            try:
                meta = client.list_topics(timeout=5)
            except Exception:  # noqa: BLE001 - any failure just means "not yet"
                return False
            return set(meta.brokers) >= expected and meta.controller_id >= 0

        wait_until(ready, timeout, "serving metadata with a controller", self.brokers[0].process)

    def restart_zookeeper(self, timeout: float = 60.0) -> None:
        self.zookeeper.restart(timeout)

    def wait_broker_registered(self, broker: KafkaBroker, timeout: float) -> None:
        path = f"/brokers/ids/{broker.broker_id}"
        wait_until(lambda: self._zk_exists(path), timeout, f"registered at {path}", broker.process)

    def log_tails(self, lines: int = 30) -> str:
        procs = [self.zookeeper.process] + [b.process for b in self.brokers]
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
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1, timeout: float = 60.0) -> None:
        from zkconsumer.testing.kafka import create_topic

        create_topic(self.bootstrap_servers, name, partitions, replication_factor, timeout)


@dataclass(frozen=True)
class ExternalCluster:
    """Addresses of a cluster somebody else runs: no process control."""

    zookeeper_connect: str
    bootstrap_servers: str

    def zk_client(self, **kwargs: object) -> KazooClient:
        return connect_zk(self.zookeeper_connect, **kwargs)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1, timeout: float = 60.0) -> None:
        from zkconsumer.testing.kafka import create_topic

        create_topic(self.bootstrap_servers, name, partitions, replication_factor, timeout)
