"""One ZooKeeper server or one ZooKeeper-mode Kafka broker as a child JVM: its config files and command line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from zkconsumer.testing.jars import classpath
from zkconsumer.testing.probes import free_port, wait_until, zookeeper_ruok
from zkconsumer.testing.process import JavaProcess
from zkconsumer.testing.secure import zookeeper_sasl_server
from zkconsumer.testing.versions import DEFAULT_KAFKA, KafkaRelease, ZooKeeperRelease, kafka_release, zookeeper_release


class KerberosServer(Protocol):
    """A KDC a Kerberos ZooKeeper server logs in to (the project's tests run MIT krb5: tests/harness/kdc.py)."""

    def zookeeper_server(self, workdir: Path) -> tuple[str, list[str]]:
        """(zoo.cfg lines, JVM flags) that make the server in `workdir` take GSSAPI logins of this realm."""
        ...


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
                # From 3.6 on the server writes the paths of all of a session's ephemeral nodes into
                # the transaction that closes it; a member that held 20,000 owner nodes made one of
                # 3.4 MB, which the server could write but not read back after a restart (limit:
                # jute.maxbuffer + this, ZOOKEEPER-4306). Requests stay capped at jute.maxbuffer.
                "-Dzookeeper.jute.maxbuffer.extrasize=16777216",
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
