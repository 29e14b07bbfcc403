"""A private network of Linux network namespaces (a bridge, one namespace per host) for fault tests on real sockets.

Layout, for a lab with run id R on the /24 S (chosen free, see `pick_subnet`)::

    root namespace (the test process: observer, producer)
      zkc-R  (veth, S.1/24: the one route this lab adds to the root namespace) ──┐
    namespace zkc-R-br:  bridge br0  ── vroot, v2, v3, ...  (layer 2 only, no address)
    namespace zkc-R-zk1: lo, eth0 S.2/24 ──┘   namespace zkc-R-kafka0: lo, eth0 S.5/24 ...

A host namespace has no default route, so it reaches nothing but S and its own loopback, and an
nftables table `zkc_guard` drops anything else it would send all the same. Faults (netfaults.py)
are nftables tables of their own in a host's namespace, added and deleted whole.

Everything is named `<prefix><run id>...` (prefix "zkc-"); a lab records itself in
/run/zkc-netlab/<run id>.json with its owner's pid, and `NetLab.create()` first removes the labs
whose owner is gone (their namespaces, the processes left in them, their root veth and route).
`close()` removes the lab's own; it runs at exit and on leaving a `with` block.

Example::

    with NetLab() as lab:
        zk = lab.host("zk1")                      # a namespace with its own address
        proc = zk.popen(["python", "-m", "http.server", "--bind", zk.address, "8000"])
        member = lab.host("member1")
        member.run(["ping", "-c", "1", zk.address])
        with netfaults.cut(lab, member, [zk]):    # a netfaults.Fault: heal() on leaving
            ...
"""

from __future__ import annotations

import atexit
import fcntl
import ipaddress
import json
import logging
import os
import re
import secrets
import signal
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zkconsumer.errors import ZkConsumerError

if TYPE_CHECKING:
    from zkconsumer.testing.relay import RelayProcess


class Healable(Protocol):
    """A fault in force (netfaults.Fault): what the lab needs of it to heal everything on close."""

    def heal(self) -> None: ...


log = logging.getLogger(__name__)

PREFIX = "zkc-"
STATE_DIR = Path("/run/zkc-netlab")
# Candidate /24s: 10.213.0.0/16 .. 10.222.0.0/16, tried from a random start; the first one that no
# address or route of the root namespace (nor another live lab) overlaps is taken.
CANDIDATES = ipaddress.ip_network("10.213.0.0/16"), 10
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}$")
_COMMAND_TIMEOUT = 30.0


class LabError(ZkConsumerError, RuntimeError):
    """A lab command failed; the message carries the command and what it printed."""


def sh(argv: Sequence[str], *, input: str | None = None, check: bool = True, timeout: float = _COMMAND_TIMEOUT) -> str:
    """Run one command (ip, nft, sysctl, ...) with a time limit; its stdout, or LabError."""
    try:
        done = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{' '.join(argv)}: {exc}") from exc
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 address (as its network) and route of the root namespace, the default route aside."""
    used = []
    for entry in json.loads(sh(["ip", "-4", "-j", "addr"]) or "[]"):
        for info in entry.get("addr_info", []):
            used.append(ipaddress.IPv4Network(f"{info['local']}/{info.get('prefixlen', 32)}", strict=False))
    for route in json.loads(sh(["ip", "-4", "-j", "route", "show", "table", "all"]) or "[]"):
        dst = route.get("dst", "")
        if dst and dst != "default" and not dst.startswith("0.0.0.0"):
            used.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return used


def pick_subnet(used: Iterable[ipaddress.IPv4Network], taken: Iterable[str] = ()) -> ipaddress.IPv4Network:
    """A /24 among the candidates that overlaps none of `used` and is none of `taken` (other labs')."""
    base, span = CANDIDATES
    used = [n for n in used if not n.is_loopback]
    taken_set = {ipaddress.ip_network(t) for t in taken}
    first = int(base.network_address)
    count = span * 256
    start = secrets.randbelow(count)
    for step in range(count):
        net = ipaddress.IPv4Network(f"{ipaddress.IPv4Address(first + ((start + step) % count) * 256)}/24")
        if net not in taken_set and not any(net.overlaps(u) for u in used):
            return net
    raise LabError(f"no free /24 in {base} and the {span - 1} after it")


def _alive(pid: int, started: str) -> bool:
    """Whether process `pid` runs and is the one that started at `started` (field 22 of its stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[19] == started


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@dataclass
class LabHost:
    """One host of a lab: a network namespace with one address. A `nodes.Place` for LocalCluster."""

    name: str
    netns: str
    address: str
    index: int
    lab: NetLab = field(repr=False)

    def port(self, usual: int) -> int:
        return usual  # the address is the host's own: the customary ports are free

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start `argv` in this host's namespace (subprocess.Popen's keywords)."""
        return subprocess.Popen(self.command(argv), **kwargs)

    def run(self, argv: Sequence[str], *, timeout: float = 60.0, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run `argv` here to its end (text output captured unless told otherwise); never raises on its exit code."""
        kwargs.setdefault("capture_output", True)
        return subprocess.run(self.command(argv), text=True, timeout=timeout, **kwargs)

    def nft(self, script: str) -> None:
        """Apply an nftables script in this namespace, atomically."""
        sh(["ip", "netns", "exec", self.netns, "nft", "-f", "-"], input=script)

    def pids(self) -> list[int]:
        """The processes running in this namespace."""
        return [int(p) for p in sh(["ip", "netns", "pids", self.netns], check=False).split()]

    def __hash__(self) -> int:
        return hash(self.netns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabHost) and other.netns == self.netns


class NetLab:
    """A private lab network; `host(name)` adds (or returns) a namespace with an address on it.

    `root_address` is this process's own address in the lab (the veth from the root namespace):
    the test process reaches every host there, and a host reaches it back. Faults are made by
    netfaults.py (`cut`, `isolate`, `split`, `drop`, `slow`, each taking the lab first and returning
    a Fault to `heal()`); the lab keeps those in force and heals them on close.
    """

    def __init__(self, *, prefix: str = PREFIX, run_id: str | None = None) -> None:
        if not re.fullmatch(r"[a-z]{1,4}-", prefix):
            raise ValueError(f"prefix must be 1-4 letters and a dash, got {prefix!r}")
        self.prefix = prefix
        self.run_id = run_id or secrets.token_hex(3)[:5]
        self.name = f"{prefix}{self.run_id}"  # also the root veth's name (<= 15 characters)
        self.bridge_ns = f"{self.name}-br"
        self.subnet: ipaddress.IPv4Network | None = None
        self.hosts: dict[str, LabHost] = {}
        self.faults: list[Healable] = []
        self.relays: dict[str, RelayProcess] = {}  # netns -> its relay
        self._lock = threading.RLock()
        self._created = False
        self._closed = False

    # ---- life ---------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return STATE_DIR / f"{self.name}.json"

    @property
    def root_address(self) -> str:
        assert self.subnet is not None, "create() the lab first"
        return str(self.subnet.network_address + 1)

    def create(self) -> NetLab:
        """Remove stale labs, pick a free /24, make the bridge and the root veth. Needs root."""
        if os.geteuid() != 0:
            raise LabError("a network lab needs root (network namespaces, veth pairs, nftables)")
        for tool in ("ip", "nft"):
            sh(["sh", "-c", f"command -v {tool}"])
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with self._lock, open(STATE_DIR / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one lab at a time picks its /24 and records it
            remove_stale_labs(self.prefix)
            taken = [json.loads(p.read_text()).get("subnet", "") for p in STATE_DIR.glob(f"{self.prefix}*.json")]
            self.subnet = pick_subnet(_used_networks(), [t for t in taken if t])
            state = {"pid": os.getpid(), "started": _start_time(os.getpid()), "subnet": str(self.subnet)}
            self.state_file.write_text(json.dumps(state))
            self._created = True
            atexit.register(self.close)
            try:
                self._make_bridge()
            except BaseException:
                self.close()
                raise
        log.info("lab %s on %s (this process is %s)", self.name, self.subnet, self.root_address)
        return self

    def _make_bridge(self) -> None:
        ns = self.bridge_ns
        sh(["ip", "netns", "add", ns])
        _no_ipv6(ns)
        sh(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", ns, "link", "set", "br0", "up"])
        # The root end lives in the root namespace under the lab's name; its peer joins the bridge.
        sh(["ip", "link", "add", self.name, "type", "veth", "peer", "name", "vroot", "netns", ns])
        sh(["sysctl", "-qw", f"net.ipv6.conf.{self.name}.disable_ipv6=1"])
        sh(["ip", "addr", "add", f"{self.root_address}/24", "dev", self.name])  # the lab's one route
        sh(["ip", "link", "set", self.name, "up"])
        sh(["ip", "-n", ns, "link", "set", "vroot", "master", "br0", "up"])

    def host(self, name: str) -> LabHost:
        """The host `name` (lower-case letters, digits, dashes), made on first use."""
        with self._lock:
            if name in self.hosts:
                return self.hosts[name]
            if not self._created or self._closed or self.subnet is None:
                raise LabError("the lab is not running: create() it first")
            if not _NAME.match(name):
                raise ValueError(f"host names are lower-case letters, digits and dashes (<= 20): {name!r}")
            index = len(self.hosts) + 2  # .1 is the root veth
            if index > 254:
                raise LabError("a lab holds at most 253 hosts")
            host = LabHost(name, f"{self.name}-{name}", str(self.subnet.network_address + index), index, self)
            ns, peer = host.netns, f"v{index}"
            sh(["ip", "netns", "add", ns])
            self.hosts[name] = host  # from here on close() removes it
            _no_ipv6(ns)
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            sh(["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", self.bridge_ns])
            sh(["ip", "-n", ns, "addr", "add", f"{host.address}/24", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            sh(["ip", "-n", self.bridge_ns, "link", "set", peer, "master", "br0", "up"])
            host.nft(_guard(self.subnet))
            return host

    def host_at(self, address: str) -> LabHost:
        """The host with that lab address (e.g. a server's `place.address`)."""
        for host in self.hosts.values():
            if host.address == address:
                return host
        raise KeyError(f"no host of lab {self.name} has address {address}")

    def close(self) -> None:
        """Heal every fault, stop the relays, end what still runs in the lab, remove everything."""
        with self._lock:
            if self._closed or not self._created:
                return
            self._closed = True
            for relay in list(self.relays.values()):
                relay.stop()
            self.relays.clear()
            self.faults.clear()  # their tables go with the namespaces
            remove_lab(self.name)
            log.info("lab %s removed", self.name)

    def __enter__(self) -> NetLab:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- faults: made by netfaults.py's functions, which register each one here until healed ----
    def heal_all(self) -> None:
        """Heal every fault still in force."""
        for fault in list(self.faults):
            fault.heal()


def _no_ipv6(netns: str) -> None:
    """No IPv6 in a lab namespace: no link-local chatter, nothing but the lab's IPv4 /24."""
    sh(
        [
            "ip",
            "netns",
            "exec",
            netns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ]
    )


def _guard(subnet: ipaddress.IPv4Network) -> str:
    """The table that lets a host send only to its lab's /24 and to its own loopback."""
    return (
        "table inet zkc_guard {\n"
        "  chain out {\n"
        "    type filter hook output priority 0; policy drop;\n"
        '    oifname "lo" accept\n'
        # 127/8 too: a connection redirected to the host's relay (netfaults.slow) is still judged
        # by the interface it was first routed to.
        "    ip daddr 127.0.0.0/8 accept\n"
        f"    ip daddr {subnet} accept\n"
        "  }\n"
        "}\n"
    )


def remove_lab(name: str) -> None:
    """Remove lab `name` (its namespaces, the processes in them, its root veth and route, its state)."""
    listed = sh(["ip", "netns", "list"], check=False).split("\n")
    namespaces = [line.split()[0] for line in listed if line.startswith(f"{name}-")]
    for ns in namespaces:
        # Only processes of this lab's own namespaces: the servers and relays it started.
        for pid in sh(["ip", "netns", "pids", ns], check=False).split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    for ns in namespaces:
        sh(["ip", "netns", "del", ns], check=False)
    if sh(["ip", "link", "show", name], check=False).strip():
        sh(["ip", "link", "del", name], check=False)  # takes the lab's route with it
    (STATE_DIR / f"{name}.json").unlink(missing_ok=True)


def remove_stale_labs(prefix: str = PREFIX) -> list[str]:
    """Remove every lab of `prefix` whose owner process is gone, and namespaces or root veths of
    `prefix` that no live lab records; returns the names removed."""
    live: set[str] = set()
    for state in STATE_DIR.glob(f"{prefix}*.json") if STATE_DIR.exists() else []:
        try:
            info = json.loads(state.read_text())
            if _alive(int(info["pid"]), str(info["started"])):
                live.add(state.stem)
        except (OSError, ValueError, KeyError):
            pass
    names = {p.stem for p in STATE_DIR.glob(f"{prefix}*.json")} if STATE_DIR.exists() else set()
    for line in sh(["ip", "netns", "list"], check=False).split("\n"):
        if line.startswith(prefix):
            names.add(line[: len(prefix) + 5])  # zkc-<run id>-<host>: the lab is zkc-<run id>
    for link in json.loads(sh(["ip", "-j", "link", "show"], check=False) or "[]"):
        ifname = str(link.get("ifname", ""))
        if re.fullmatch(re.escape(prefix) + r"[0-9a-f]{5}", ifname):
            names.add(ifname)
    stale = sorted(n for n in names if n not in live and re.fullmatch(re.escape(prefix) + r"[0-9a-f]{5}", n))
    for name in stale:
        log.warning("removing stale network lab %s", name)
        remove_lab(name)
    return stale
