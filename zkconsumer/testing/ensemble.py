"""The ZooKeeper side of a LocalCluster: one standalone server, or an ensemble of N with quorum and election ports."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zkconsumer.testing.nodes import LOOPBACK, KerberosServer, Place, ZooKeeperNode
from zkconsumer.testing.probes import ClusterStartError, four_letter_word
from zkconsumer.testing.versions import ZooKeeperRelease

log = logging.getLogger(__name__)


class ZooKeeperEnsemble:
    """`count` ZooKeeper servers started from the same jars; `count=1` is the standalone server of old.

    An ensemble's servers have myids 1..count and listen on their place's address: on loopback
    each on free client, quorum and election ports, in a lab (netlab.NetLab) each on its own
    address with the usual 2181, 2888 and 3888. Which one leads is asked with `srvr` (the
    four-letter word: "Mode: leader"); `stop_server`, `kill_server`, `start_server` and
    `restart_server` act on one of them by myid.

    Example::

        ensemble = ZooKeeperEnsemble(workdir, 3, release=release)
        ensemble.start()
        leader = ensemble.wait_leader()
        ensemble.kill_server(leader.server_id)
        new_leader = ensemble.wait_leader(not_server=leader.server_id)
    """

    def __init__(
        self,
        workdir: Path,
        count: int = 1,
        *,
        release: ZooKeeperRelease,
        broker_jars: str = "kafka39",
        sasl_users: Mapping[str, str] | None = None,
        kerberos: KerberosServer | None = None,
        places: Sequence[Place] | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        if count < 1:
            raise ValueError("a cluster needs at least one ZooKeeper server")
        places = list(places) if places is not None else [LOOPBACK] * count
        if len(places) != count:
            raise ValueError(f"{count} ZooKeeper servers need {count} places, got {len(places)}")

        def node(place: Place, **kwargs: Any) -> ZooKeeperNode:
            return ZooKeeperNode(
                workdir,
                release=release,
                broker_jars=broker_jars,
                sasl_users=sasl_users,
                kerberos=kerberos,
                place=place,
                settings=settings,
                **kwargs,
            )

        if count == 1:
            self.servers = [node(places[0])]
            return
        ports = [(p.port(2181), p.port(2888), p.port(3888)) for p in places]
        quorum = [f"server.{i}={p.address}:{q}:{e}" for i, (p, (_, q, e)) in enumerate(zip(places, ports), start=1)]
        self.servers = [
            node(p, port=c, server_id=i, quorum=quorum) for i, (p, (c, _, _)) in enumerate(zip(places, ports), start=1)
        ]

    # ---- addresses -------------------------------------------------------------------------
    @property
    def hosts(self) -> str:
        """host:port,host:port,... of every server (what clients put in zookeeper.connect)."""
        return ",".join(s.hosts for s in self.servers)

    @property
    def is_ensemble(self) -> bool:
        return len(self.servers) > 1

    def server(self, server_id: int) -> ZooKeeperNode:
        """The server with myid `server_id` (1-based; the standalone server is 1)."""
        if not 1 <= server_id <= len(self.servers):
            raise ValueError(f"no ZooKeeper server {server_id} (myids are 1..{len(self.servers)})")
        return self.servers[server_id - 1]

    # ---- the whole ensemble ----------------------------------------------------------------
    def start(self, timeout: float = 120.0, *, detach: bool = False) -> None:
        """Start every server, then wait until each one serves (an ensemble: has joined a quorum)."""
        for server in self.servers:
            server.process.start(detach=detach)
        deadline = time.monotonic() + timeout
        for server in self.servers:
            server.wait_serving(max(1.0, deadline - time.monotonic()))

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def restart(self, timeout: float = 60.0) -> None:
        """Stop every server, then start them all on the same ports and data (sessions survive
        when within their timeout)."""
        self.stop()
        self.start(timeout)

    def quorum_running(self) -> bool:
        """Whether a majority of the servers' processes run (not whether they can reach each other)."""
        return sum(s.process.running for s in self.servers) * 2 > len(self.servers)

    # ---- leadership --------------------------------------------------------------------------
    def modes(self, timeout: float = 2.0) -> dict[int, str | None]:
        """myid -> what its `srvr` says (leader, follower, standalone), None for no quorum or no answer."""
        return {i: s.mode(timeout) if s.process.running else None for i, s in enumerate(self.servers, start=1)}

    def leader(self, timeout: float = 2.0) -> ZooKeeperNode | None:
        """The server that says it leads (the standalone server leads itself); None during an election.

        Two servers can both say "leader" for a moment (an isolated leader has not stepped down
        yet): the one whose peers follow it is the leader, so a server in a minority is not taken.
        """
        modes = self.modes(timeout)
        if not self.is_ensemble:
            return self.servers[0] if modes[1] == "standalone" else None
        leaders = [i for i, m in modes.items() if m == "leader"]
        followers = sum(1 for m in modes.values() if m == "follower")
        if len(leaders) == 1 and (followers + 1) * 2 > len(self.servers):
            return self.server(leaders[0])
        return None

    def wait_leader(self, timeout: float = 60.0, *, not_server: int | None = None) -> ZooKeeperNode:
        """Until a majority has a leader (other than server `not_server`, when given); returns it."""
        deadline = time.monotonic() + timeout
        while True:
            leader = self.leader(timeout=1.0)
            if leader is not None and leader.server_id != not_server:
                return leader
            if time.monotonic() > deadline:
                raise ClusterStartError(f"no ZooKeeper leader after {timeout:.0f}s; modes {self.modes(1.0)}")
            time.sleep(0.1)

    # ---- one server --------------------------------------------------------------------------
    def stop_server(self, server_id: int) -> None:
        """SIGTERM (then SIGKILL after 30 s) one server."""
        self.server(server_id).stop()

    def kill_server(self, server_id: int) -> None:
        """kill -9 one server."""
        self.server(server_id).kill()

    def start_server(self, server_id: int, timeout: float = 60.0) -> None:
        """Start a stopped server on its ports and data; wait until it serves (rejoined a quorum)."""
        server = self.server(server_id)
        if not server.process.running:
            server.process.start()
        server.wait_serving(timeout)

    def restart_server(self, server_id: int, timeout: float = 60.0) -> None:
        self.stop_server(server_id)
        self.start_server(server_id, timeout)

    def session_timeout(self, session_id: int, timeout: float = 2.0) -> int | None:
        """The timeout (ms) the server holding session `session_id` granted it, from `cons`; None if
        no server lists the session (not connected right now)."""
        for server in self.servers:
            answer = four_letter_word(server.port, "cons", timeout, host=server.address) or ""
            match = re.search(rf"sid=0x0*{session_id:x},[^)]*?\bto=(\d+)", answer)
            if match:
                return int(match.group(1))
        return None

    def log_tails(self, lines: int = 30) -> str:
        return "\n".join(f"--- {s.name} ({s.process.log_path}) ---\n{s.process.log_tail(lines)}" for s in self.servers)
