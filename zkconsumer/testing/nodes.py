"""One ZooKeeper server or one ZooKeeper-mode Kafka broker as a child JVM: its config files and command line."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from zkconsumer.testing.jars import classpath
from zkconsumer.testing.probes import four_letter_word, free_port, wait_until, zookeeper_ruok
from zkconsumer.testing.process import JavaProcess
from zkconsumer.testing.secure import zookeeper_sasl_server
from zkconsumer.testing.versions import DEFAULT_KAFKA, KafkaRelease, ZooKeeperRelease, kafka_release, zookeeper_release


class KerberosServer(Protocol):
    """A KDC a Kerberos ZooKeeper server logs in to (the project's tests run MIT krb5: tests/harness/kdc.py)."""

    def zookeeper_server(self, workdir: Path) -> tuple[str, list[str]]:
        """(zoo.cfg lines, JVM flags) that make the server in `workdir` take GSSAPI logins of this realm."""
        ...


class Place(Protocol):
    """Where a server runs: the address it binds and is reached on, its ports, and how a command gets there."""

    @property
    def address(self) -> str: ...

    def port(self, usual: int) -> int:
        """The port to use where `usual` is the service's customary one (2181, 9092, ...)."""
        ...

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` as run at this place (in a network namespace: behind `ip netns exec <ns>`)."""
        ...


class Lab(Protocol):
    """Hands out places by name (netlab.NetLab: one network namespace per name)."""

    def host(self, name: str) -> Place: ...


@dataclass(frozen=True)
class Loopback:
    """The default place: 127.0.0.1 in this network namespace, every server on a free port of its own."""

    address: str = "127.0.0.1"

    def port(self, usual: int) -> int:
        return free_port()

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)


LOOPBACK = Loopback()


def java_process(name: str, args: Sequence[str], log_path: Path, place: Place) -> JavaProcess:
    """A JavaProcess running `java args` at `place` (on loopback: exactly `java args`)."""
    command = place.command(["java", *args])
    return JavaProcess(name, command[1:], log_path=log_path, java=command[0])


_MODE = re.compile(r"^Mode: (\w+)", re.MULTILINE)


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
    """A ZooKeeper server with a fixed port: by default a standalone one, from the Kafka 3.9 jars.

    `broker_jars` is the jar set to run when `release.jar_set` is None (a broker's bundled server).
    `sasl_users` (user -> password) enables SASL DIGEST-MD5 authentication (secure.zookeeper_sasl_server);
    `kerberos` GSSAPI instead: the server is zookeeper/localhost in that KDC's realm and clients
    reach it as localhost:<port>.

    With `server_id` (its myid) and `quorum` (every member's `server.N=host:quorum:election` line) it
    is one server of an ensemble (ensemble.ZooKeeperEnsemble builds those): QuorumPeerMain, its files
    named after its id (zoo-N.cfg, zookeeper-N-data/ holding myid, zookeeper-N.log). `place` is where
    it runs (loopback, or a lab host); `settings` are zoo.cfg lines added last (they win).
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
        server_id: int | None = None,
        quorum: Sequence[str] = (),
        place: Place = LOOPBACK,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        if sasl_users and kerberos is not None:
            raise ValueError("a ZooKeeper server takes one SASL mechanism: DIGEST-MD5 users or Kerberos")
        if (server_id is None) != (not quorum):
            raise ValueError("an ensemble server needs both its server_id and the quorum lines")
        self.release = release or zookeeper_release(None, kafka_release(DEFAULT_KAFKA))
        self.place = place
        self.address = place.address  # where it listens (four-letter words go there)
        self.port = port or place.port(2181)
        self.workdir = workdir
        self.server_id = server_id
        suffix = "" if server_id is None else f"-{server_id}"
        self.data_dir = workdir / f"zookeeper{suffix}-data"
        self.host = "localhost" if kerberos is not None else place.address
        cfg = workdir / ("zoo.cfg" if server_id is None else f"zoo-{server_id}.cfg")
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
        # An ensemble server: initLimit 20 ticks (10 s) for a follower's first sync on a starved
        # machine; syncLimit 6 ticks (3 s): a follower or leader that hears nothing from its peer
        # for that long gives up on it, so an isolated leader steps down within about 3 s.
        ensemble = "initLimit=20\nsyncLimit=6\n" + "".join(f"{line}\n" for line in quorum) if quorum else ""
        extra = "".join(f"{k}={v}\n" for k, v in (settings or {}).items())
        cfg.write_text(
            f"tickTime=500\nmaxSessionTimeout=60000\ndataDir={self.data_dir}\nclientPort={self.port}\n"
            f"clientPortAddress={place.address}\nmaxClientCnxns=0\nadmin.enableServer=false\nforceSync=no\n"
            "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons\n" + sasl_cfg + ensemble + extra
        )
        if server_id is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            (self.data_dir / "myid").write_text(f"{server_id}\n")
        log4j = workdir / "log4j.properties"
        main = "org.apache.zookeeper.server." + (
            "ZooKeeperServerMain" if server_id is None else "quorum.QuorumPeerMain"
        )
        self.process = java_process(
            f"zookeeper{suffix}",
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
                main,
                str(cfg),
            ],
            workdir / f"zookeeper{suffix}.log",
            place,
        )

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def name(self) -> str:
        return self.process.name

    def mode(self, timeout: float = 2.0) -> str | None:
        """What `srvr` says it is: standalone, leader, follower or observer; None while it serves no
        clients (an ensemble server outside a quorum answers "not currently serving requests")."""
        match = _MODE.search(four_letter_word(self.port, "srvr", timeout, host=self.address) or "")
        return match.group(1) if match else None

    def serving(self) -> bool:
        """Ready for clients: a standalone server answers ruok, an ensemble server is in a quorum."""
        if self.server_id is None:
            return zookeeper_ruok(self.port, host=self.address)
        return self.mode(timeout=1.0) is not None

    def wait_serving(self, timeout: float = 60.0) -> None:
        what = "answering ruok" if self.server_id is None else "serving in a quorum"
        wait_until(self.serving, timeout, what, self.process)

    def start(self, timeout: float = 60.0) -> None:
        self.process.start()
        self.wait_serving(timeout)

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def restart(self, timeout: float = 60.0) -> None:
        """Stop and start on the same port and data: sessions survive if within their timeout."""
        self.stop()
        self.start(timeout)


class KafkaBroker:
    """One ZooKeeper-mode broker with a PLAINTEXT listener on a fixed port (of loopback or of its `place`)."""

    def __init__(
        self,
        broker_id: int,
        workdir: Path,
        zookeeper_connect: str,
        jvm_opts: tuple[str, ...],
        extra_properties: dict[str, str],
        release: KafkaRelease | None = None,
        extra_listeners: tuple[str, ...] = (),
        place: Place = LOOPBACK,
    ) -> None:
        self.release = release or kafka_release(DEFAULT_KAFKA)
        self.broker_id = broker_id
        self.place = place
        self.port = place.port(9092)
        # Listeners named after their protocol (SSL, SASL_SSL), on ports of their own.
        self.listener_ports = {
            "PLAINTEXT": self.port,
            **{name: place.port(9093 + i) for i, name in enumerate(extra_listeners)},
        }
        self.log_dir = workdir / f"kafka-{broker_id}-data"
        props = workdir / f"server-{broker_id}.properties"
        extra = "".join(f"{k}={v}\n" for k, v in extra_properties.items())
        props.write_text(
            BROKER_PROPERTIES + extra + f"broker.id={broker_id}\n{self._listener_lines()}log.dirs={self.log_dir}\n"
            f"zookeeper.connect={zookeeper_connect}\n"
        )
        self.process = java_process(
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
            workdir / f"kafka-{broker_id}.log",
            place,
        )

    def _listener_lines(self) -> str:
        """`listeners=` (0.9 on), or 0.8.2's single PLAINTEXT endpoint: bound as host.name/port and
        registered as advertised.host.name/advertised.port (else it registers the machine's hostname)."""
        if self.release.listeners:
            listeners = ",".join(f"{name}://{self.place.address}:{port}" for name, port in self.listener_ports.items())
            return f"listeners={listeners}\n"
        others = [name for name in self.listener_ports if name != "PLAINTEXT"]
        if others:
            raise ValueError(
                f"Kafka {self.release.version} has one PLAINTEXT endpoint: no {', '.join(others)} listener"
            )
        host = self.place.address
        return f"host.name={host}\nport={self.port}\nadvertised.host.name={host}\nadvertised.port={self.port}\n"

    @property
    def address(self) -> str:
        return f"{self.place.address}:{self.port}"

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()
