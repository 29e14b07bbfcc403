"""LinkedIn's Burrow lag monitor run against a LocalCluster, reading ZooKeeper-stored group offsets."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from zkconsumer.testing.probes import ClusterStartError, free_port, get_json, start_until, wait_until
from zkconsumer.testing.process import JavaProcess

CLUSTER_NAME = "local"
INSTALL_HINT = "install Debian's package burrow (apt-get install burrow; scripts/test.sh does it)"

# Burrow 1.2.1's own settings file. Its sarama client profile knows versions up to 2.1.0 only;
# 0.10.2 reads log-end offsets from every broker from 0.10.2.2 to 3.9.1.
_CONFIG = """\
[general]
pidfile="{workdir}/burrow.pid"

[logging]
level="info"

[zookeeper]
servers=[{zk_hosts}]
timeout=6
root-path="/burrow"

[client-profile.zkera]
client-id="burrow-zkconsumer-test"
kafka-version="0.10.2"

[cluster.{cluster}]
class-name="kafka"
servers=[{brokers}]
client-profile="zkera"
topic-refresh=5
offset-refresh={offset_refresh}

[consumer.zk]
class-name="kafka_zk"
cluster="{cluster}"
servers=[{zk_hosts}]
zookeeper-path="{chroot}"
zookeeper-timeout=30

[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group={expire_group}
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1

[httpserver.default]
address="127.0.0.1:{port}"
"""


def burrow_binary() -> str:
    """Path of the Burrow executable; ClusterStartError naming the package when it is missing."""
    found = shutil.which("Burrow") or shutil.which("burrow")
    if found is None:
        raise ClusterStartError(f"Burrow is not on PATH: {INSTALL_HINT}")
    return found


class Burrow:
    """One Burrow process watching `cluster`'s ZooKeeper offsets (its `kafka_zk` consumer module).

    Example::

        with Burrow(cluster.zookeeper_connect, cluster.bootstrap_servers, workdir) as burrow:
            lag = burrow.group_lag("my-group")   # Burrow's /v3/kafka/local/consumer/<group>/lag
            print(lag["status"]["totallag"])

    Burrow reads `/consumers` under the chroot of `zookeeper_connect` and asks the brokers for log-end offsets
    every `offset_refresh` seconds. Its ZooKeeper module cannot authenticate (Burrow#347), so it
    reads only groups whose nodes are world-readable (a secured Scala member leaves them so).
    """

    def __init__(
        self,
        zookeeper_connect: str,
        bootstrap_servers: str,
        workdir: Path,
        *,
        offset_refresh: int = 2,
        expire_group: int = 604_800,
    ) -> None:
        self.port = free_port()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        hosts, slash, chroot = zookeeper_connect.partition("/")
        zk_hosts = ", ".join(f'"{host}"' for host in hosts.split(","))
        brokers = ", ".join(f'"{address}"' for address in bootstrap_servers.split(","))
        (self.workdir / "burrow.toml").write_text(
            _CONFIG.format(
                workdir=self.workdir,
                zk_hosts=zk_hosts,
                cluster=CLUSTER_NAME,
                brokers=brokers,
                offset_refresh=offset_refresh,
                expire_group=expire_group,
                chroot=slash + chroot if chroot else "",
                port=self.port,
            )
        )
        self.process = JavaProcess(
            "burrow", ["-config-dir", str(self.workdir)], log_path=self.workdir / "burrow.log", java=burrow_binary()
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Burrow:
        """Start Burrow; return once it answers HTTP and knows the cluster's topics."""
        start_until(self.process, self._knows_topics, timeout, "listing the cluster's topics over HTTP")
        return self

    def stop(self) -> None:
        self.process.stop(timeout=10.0)

    def __enter__(self) -> Burrow:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    def get(self, path: str) -> dict[str, Any]:
        """GET one of Burrow's JSON endpoints (e.g. "/v3/kafka/local/consumer"); its answer, errors included."""
        return dict(get_json(self.url + path, 5.0))

    def groups(self) -> list[str]:
        """The consumer groups Burrow has seen offsets for."""
        return list(self.get(f"/v3/kafka/{CLUSTER_NAME}/consumer").get("consumers", []))

    def group_lag(self, group: str) -> dict[str, Any]:
        """Burrow's evaluation of `group`: {"error": bool, "message": ..., "status": {...}}."""
        return self.get(f"/v3/kafka/{CLUSTER_NAME}/consumer/{group}/lag")

    def wait_for_topic(self, topic: str, partitions: int, timeout: float = 60.0) -> None:
        """Until Burrow has log-end offsets for every partition of `topic`.

        Burrow 1.2.1 drops a committed offset it reads before it knows the topic's log-end offsets
        and reads that node again only when it changes: commit after this, or an idle partition
        of a new topic never shows up in its lag.
        """

        def known() -> bool:
            return len(self.get(f"/v3/kafka/{CLUSTER_NAME}/topic/{topic}").get("offsets") or []) == partitions

        wait_until(known, timeout, f"log-end offsets of the {partitions} partitions of {topic}", self.process)

    def _knows_topics(self) -> bool:
        try:
            return "topics" in self.get(f"/v3/kafka/{CLUSTER_NAME}/topic")
        except (OSError, ValueError):
            return False
