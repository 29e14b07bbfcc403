"""Run real Scala 1.1.1 consumers (and the legacy ZooKeeper ops tools) as subprocesses for interop tests.

Java 17 needs nothing special for the 1.1.1 client: no --add-opens, no -Dzookeeper.sasl.client
(its ZooKeeper 3.4.10 client resolves 127.0.0.1/localhost eagerly; the ZOOKEEPER-3779
"canonicalize" failure is 3.4.13+ only). The SASL INFO line "Will not attempt to authenticate
using SASL (unknown error)" is just "no JAAS file". Only the test heap/JIT flags below are set.

Example::

    member = ScalaMember(cluster.zookeeper_connect, "g", "s1", workdir=tmp_path, topics={"t": 2})
    member.start(); member.wait_ready()
    ...; member.stop()                    # SIGTERM: connector.shutdown() commits, then exit
    print(member.deliveries())            # [("t", 0, 0), ("t", 0, 1), ...]

With `zookeeper_sasl=(user, password)` the member logs in to ZooKeeper with SASL DIGEST-MD5 (a JAAS
file with a `Client` section, named by -Djava.security.auth.login.config): Kafka 1.1.1 then sees
ZooKeeper security enabled and creates its owners/ and offsets/ nodes with ACLs `sasl:<user>` ALL
+ `world:anyone` READ (ids/, its member node and the group node stay open: world ALL).
"""

from __future__ import annotations

import collections
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zkconsumer.testing.jars import jar_dir, jars_home
from zkconsumer.testing.process import JavaProcess
from zkconsumer.testing.secure import client_jaas

if TYPE_CHECKING:
    from harness.kdc import KerberosLogin

JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SOURCES = sorted((Path(__file__).with_name("java")).glob("*.java"))  # ScalaMember, ScalaBench
MAIN_CLASS = "ScalaMember"

# Quick failure detection and enough retries to outlive a crashed peer's 6 s session.
FAST_PROPERTIES: dict[str, object] = {
    "auto.offset.reset": "smallest",
    "zookeeper.session.timeout.ms": 6000,
    "zookeeper.connection.timeout.ms": 10000,
    "rebalance.backoff.ms": 500,
    "rebalance.max.retries": 20,
}

_LOG4J = """\
log4j.rootLogger={root}, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.consumer.ZookeeperConsumerConnector={consumer}
log4j.logger.kafka.consumer.RangeAssignor={consumer}
log4j.logger.kafka.consumer.RoundRobinAssignor={consumer}
"""


class ScalaError(RuntimeError):
    """A Scala member or tool failed; the message carries its output."""


# ---------------------------------------------------------------- compiling the member program


# Each Scala client release the harness runs, and the jar set it runs from (zkconsumer/testing/poms/<set>).
# The 0.10.2.2 client is the 0.10.2.2 broker's jar set; 1.1.1 (the default) is kafka11.
RELEASES: dict[str, str] = {
    "0.8.2.2": "kafka0822",
    "0.9.0.1": "kafka0901",
    "0.10.2.2": "kafka0102",
    "1.0.2": "kafka102",
    "1.1.1": "kafka11",
}
DEFAULT_RELEASE = "1.1.1"
# The zkconsumer.compat.version a zkconsumer member beside each release sets (docs/differences.md).
COMPAT_VERSION = {"0.8.2.2": "0.8.2", "0.9.0.1": "0.9", "0.10.2.2": "0.10.2", "1.0.2": "1.0.1", "1.1.1": "1.1"}


def jar_set(release: str) -> str:
    try:
        return RELEASES[release]
    except KeyError:
        raise ValueError(f"no Scala client release {release!r} (known: {', '.join(RELEASES)})") from None


def _client_jars(release: str) -> list[Path]:
    return sorted(jar_dir(jar_set(release)).glob("*.jar"))


def _javac() -> list[str]:
    # The JRE-only package (openjdk-17-jre-headless) lacks the javac launcher but still ships the
    # jdk.compiler module, so `java -m jdk.compiler/...` compiles the same bytes.
    javac = shutil.which("javac")
    return [javac] if javac else ["java", "-m", "jdk.compiler/com.sun.tools.javac.Main"]


def member_home(release: str = DEFAULT_RELEASE) -> Path:
    """Compiled ScalaMember.class plus log4j files, cached per source/jar-set content under .jars/.

    One source serves every release: it uses only the Java API that 0.8.2.2 through 1.1.1 share."""
    jars = _client_jars(release)
    digest = hashlib.sha256()
    for source in SOURCES:
        digest.update(source.read_bytes())
    for jar in jars:
        digest.update(jar.name.encode())
    digest.update(_LOG4J.encode())
    name = digest.hexdigest()[:16]
    # Next to the jars (.jars/ is git-ignored); a temp folder if that is read-only.
    folder = f"{jar_set(release)}-member"
    roots = [jars_home() / folder, Path(tempfile.gettempdir()) / f"zkconsumer-{folder}"]
    for root in roots:
        if (root / name / f"{MAIN_CLASS}.class").is_file():
            return root / name
    for root in roots:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(root, os.W_OK):
            return _compile(jars, root / name)
    raise ScalaError(f"no writable folder to compile the member programs into (tried {', '.join(map(str, roots))})")


def _compile(jars: list[Path], target: Path) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        # javac does not expand "dir/*" classpath wildcards: list the jars.
        cmd = [
            *_javac(),
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            os.pathsep.join(map(str, jars)),
            "-d",
            str(tmp),
            *map(str, SOURCES),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise ScalaError(
                f"compiling {len(SOURCES)} programs failed ({' '.join(cmd[:3])}...):\n{done.stdout}{done.stderr}"
            )
        (tmp / "member-log4j.properties").write_text(_LOG4J.format(root="WARN", consumer="INFO"))
        (tmp / "tools-log4j.properties").write_text(_LOG4J.format(root="WARN", consumer="WARN"))
        try:
            tmp.rename(target)  # atomic publish; a concurrent run may have won the race
        except OSError:
            if not (target / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _classpath(release: str, *extra: Path) -> str:
    # Only the release's own folder: never mix with the kafka39 jars (two Scala/Kafka versions).
    return os.pathsep.join([str(jar_dir(jar_set(release)) / "*"), *map(str, extra)])


def bench_command(
    zookeeper_connect: str, topic: str, workdir: Path, *, reset: str, jvm_opts: Sequence[str], mode: Sequence[str]
) -> tuple[list[str], Path]:
    """The argv of ScalaBench (1.1.1) reading `topic` in a group of its own from `reset` (smallest or
    largest), and the file it writes; `mode` is `--count N` or `--record` (java/ScalaBench.java)."""
    name = uuid.uuid4().hex[:6]
    props, out = workdir / f"scala-bench-{name}.properties", workdir / f"scala-bench-{name}.out"
    props.write_text(
        f"zookeeper.connect={zookeeper_connect}\ngroup.id=bench-scala-{name}\nconsumer.id={name}\n"
        f"auto.offset.reset={reset}\nauto.commit.enable=false\n"
    )
    home = member_home()
    command = [
        "java",
        *jvm_opts,
        f"-Dlog4j.configuration=file:{home / 'member-log4j.properties'}",
        "-cp",
        _classpath(DEFAULT_RELEASE, home),
        "ScalaBench",
        *("--props", str(props), "--topic", topic, "--out", str(out), *mode),
    ]
    return command, out


# ---------------------------------------------------------------- one Scala group member


class ScalaMember:
    """A ZookeeperConsumerConnector (1.1.1, or `release`: see RELEASES) in its own JVM, with a static
    or wildcard subscription.

    `topics` maps topic -> streams (static); otherwise `whitelist`/`blacklist` + `streams`.
    `consumer.id` is always set to `name`, so `consumer_id` is f"{group}_{name}".
    Each delivery is a flushed "<topic> <partition> <offset>" line in `out_path` (`timed`: the
    chaos members' "<clock> <topic> <partition> <offset> <value>", for a chaos Checker to follow).
    `zookeeper_sasl` = (user, password): log in to ZooKeeper with SASL DIGEST-MD5 (module docstring);
    `zookeeper_kerberos`: log in with GSSAPI from that principal's keytab instead.
    `wrap` runs the JVM somewhere else, e.g. in a network lab host (`wrap=lab_host.command`).
    """

    def __init__(
        self,
        zookeeper_connect: str,
        group: str,
        name: str,
        *,
        workdir: Path,
        topics: Mapping[str, int] | None = None,
        whitelist: str | None = None,
        blacklist: str | None = None,
        streams: int = 1,
        strategy: str = "range",
        properties: Mapping[str, object] | None = None,
        timed: bool = False,
        zookeeper_sasl: tuple[str, str] | None = None,
        zookeeper_kerberos: KerberosLogin | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        release: str = DEFAULT_RELEASE,
    ) -> None:
        if (topics is None) == (whitelist is None and blacklist is None):
            raise ValueError("give either topics or one of whitelist/blacklist")
        self.group = group
        self.name = name
        self.consumer_id = f"{group}_{name}"
        self.release = release
        workdir.mkdir(parents=True, exist_ok=True)
        self.out_path = workdir / f"scala-{name}.deliveries"
        self.log_path = workdir / f"scala-{name}.log"
        props = {
            **FAST_PROPERTIES,
            "zookeeper.connect": zookeeper_connect,
            "group.id": group,
            "consumer.id": name,
            "partition.assignment.strategy": strategy,
            **(properties or {}),
        }
        props_path = workdir / f"scala-{name}.properties"
        props_path.write_text("".join(f"{k}={_escape_property(str(v))}\n" for k, v in props.items()))
        args = ["--props", str(props_path), "--out", str(self.out_path)] + (["--timed"] if timed else [])
        if topics is not None:
            for topic, count in topics.items():
                args += ["--topic", f"{topic}={count}"]
        else:
            args += ["--whitelist", whitelist] if whitelist is not None else ["--blacklist", str(blacklist)]
            args += ["--streams", str(streams)]
        home = member_home(release)
        sasl_flags: list[str] = []
        jaas = client_jaas(*zookeeper_sasl) if zookeeper_sasl else None
        if zookeeper_kerberos is not None:
            jaas = zookeeper_kerberos.client_jaas()
            sasl_flags = zookeeper_kerberos.kdc.jvm_flags()
        if jaas is not None:
            jaas_path = workdir / f"scala-{name}.jaas"
            jaas_path.write_text(jaas)
            sasl_flags.append(f"-Djava.security.auth.login.config={jaas_path}")
        command = [
            "java",
            *JVM_OPTS,
            *sasl_flags,
            f"-Dlog4j.configuration=file:{home / 'member-log4j.properties'}",
            "-cp",
            _classpath(release, home),
            MAIN_CLASS,
            *args,
        ]
        command = wrap(command) if wrap is not None else command  # e.g. a lab host's `ip netns exec`
        self.process = JavaProcess(f"scala-{name}", command[1:], log_path=self.log_path, java=command[0])
        self._log_start = 0  # a restart under the same name appends: only read this run's part

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> ScalaMember:
        """Launch the JVM (returns at once; see wait_ready)."""
        self.out_path.touch()
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process.start()
        return self

    def wait_ready(self, timeout: float = 90.0) -> ScalaMember:
        """Until createMessageStreams returned (registered, first rebalance done)."""
        deadline = time.monotonic() + timeout
        while f"READY {self.consumer_id}" not in self._log():
            if not self.process.running:
                raise ScalaError(
                    f"Scala member {self.name} exited ({self.process.exit_code}) before "
                    f"it was ready:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise ScalaError(f"Scala member {self.name} not ready after {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM: the shutdown hook calls connector.shutdown() (commits, closes ZooKeeper)."""
        self.process.stop(timeout)
        if "STOPPED " + self.consumer_id not in self._log():
            raise ScalaError(f"Scala member {self.name} did not shut down cleanly:\n{self.log_tail()}")

    def kill(self) -> None:
        """kill -9: no commit; owner and member nodes linger until the session expires."""
        self.process.kill()

    @property
    def running(self) -> bool:
        return self.process.running

    # ---- what it did -------------------------------------------------------------------------
    def deliveries(self) -> list[tuple[str, int, int]]:
        """(topic, partition, offset) per message handed to the application, in order."""
        return read_deliveries(self.out_path)

    def keys(self) -> collections.Counter[tuple[str, int, int]]:
        return collections.Counter(self.deliveries())

    def log_tail(self, lines: int = 60) -> str:
        return self.process.log_tail(lines)

    def _log(self) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_start)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def __repr__(self) -> str:
        return f"ScalaMember({self.consumer_id!r}, {self.release}, running={self.running})"


def read_deliveries(path: Path) -> list[tuple[str, int, int]]:
    """Parse "<topic> <partition> <offset>" lines (ScalaMember.java and harness.member)."""
    text = path.read_text() if path.exists() else ""
    out = []
    for line in text.splitlines(keepends=True):
        if line.endswith("\n"):  # a torn last line (kill -9 mid-write) is not a delivery
            fields = line.split()
            topic, partition, offset = fields if len(fields) == 3 else fields[1:4]
            out.append((topic, int(partition), int(offset)))
    return out


def _escape_property(value: str) -> str:
    # java.util.Properties.load treats '\' as an escape and drops leading blanks.
    return value.replace("\\", "\\\\").replace("\n", "\\n").lstrip()


# ---------------------------------------------------------------- legacy ops tools (1.1.1 unless asked)


def run_tool(
    main_class: str,
    *args: str,
    timeout: float = 120.0,
    jvm_opts: Sequence[str] = JVM_OPTS,
    release: str = DEFAULT_RELEASE,
) -> str:
    """Run a Kafka tool's main class from `release`'s jars; return its stdout, raise ScalaError on a
    non-zero exit. `jvm_opts`: the test harness's small JVM by default (C1 only: quick to start, slow to run)."""
    home = member_home(release)
    cmd = [
        "java",
        *jvm_opts,
        f"-Dlog4j.configuration=file:{home / 'tools-log4j.properties'}",
        "-cp",
        _classpath(release),
        main_class,
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise ScalaError(f"{main_class} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def describe_group(zookeeper_connect: str, group: str, release: str = DEFAULT_RELEASE) -> str:
    """kafka-consumer-groups.sh --zookeeper Z --describe --group G (0.9.0.1 and later)."""
    return run_tool(
        "kafka.admin.ConsumerGroupCommand",
        "--zookeeper",
        zookeeper_connect,
        "--describe",
        "--group",
        group,
        release=release,
    )


def check_consumer_offsets(zookeeper_connect: str, group: str, release: str) -> str:
    """kafka-consumer-offset-checker.sh --zookeeper Z --group G (0.8.2.2 to 0.10.2.2; gone in 1.0)."""
    return run_tool(
        "kafka.tools.ConsumerOffsetChecker", "--zookeeper", zookeeper_connect, "--group", group, release=release
    )


def parse_describe(stdout: str) -> list[dict[str, str]]:
    """Rows of ConsumerGroupCommand --describe as dicts keyed by its column headers."""
    lines = [line.split() for line in stdout.splitlines() if line.strip()]
    header_at = next(i for i, cols in enumerate(lines) if cols[:2] == ["TOPIC", "PARTITION"])
    header = lines[header_at]
    return [dict(zip(header, cols)) for cols in lines[header_at + 1 :] if len(cols) == len(header)]


def verify_consumer_rebalance(zookeeper_connect: str, group: str, release: str = DEFAULT_RELEASE) -> str:
    """kafka.tools.VerifyConsumerRebalance: stdout says 'Rebalance operation successful !' or 'failed'."""
    return run_tool(
        "kafka.tools.VerifyConsumerRebalance",
        "--zookeeper.connect",
        zookeeper_connect,
        "--group",
        group,
        release=release,
    )


def export_zk_offsets(zookeeper_connect: str, group: str, output_file: Path) -> str:
    """kafka.tools.ExportZkOffsets; returns the file it wrote ('/consumers/G/offsets/T/p:offset' lines).

    The tool prints nothing to stdout, so the written file is the useful answer.
    """
    run_tool(
        "kafka.tools.ExportZkOffsets",
        "--zkconnect",
        zookeeper_connect,
        "--group",
        group,
        "--output-file",
        str(output_file),
    )
    return Path(output_file).read_text()
