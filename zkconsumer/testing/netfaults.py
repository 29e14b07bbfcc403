"""Network faults in a NetLab: cut, isolate, split and lossy links as nftables tables, slow links through a relay.

Every fault lives in the namespaces of the hosts it names, never in the root namespace, and acts
on addresses of the lab only (a peer outside the lab's /24 is refused). Each returns a `Fault`
whose `heal()` undoes exactly what it did; a `with` block heals on leaving.

* cut(host, peers): tables in `host`'s namespace drop every packet to and from `peers`, as a
  pulled cable does: nothing is refused or reset, TCP just hears nothing (the peers' own sockets
  learn it only from their timeouts).
* isolate(host): the same against the whole lab /24 (this process's address aside unless
  `keep_root=False`: the harness keeps watching it, as an operator's monitoring would).
* split(side_a, side_b): each host of a side cut from every host of the other.
* drop(host, peers, percent): ``numgen random mod 100 < percent drop`` each way: TCP retransmits.
* slow(host, peers, delay_ms): the kernel here has no netem, and a token bucket (tbf, htb) only
  delays traffic once a link is saturated, so neither can add latency to a ZooKeeper ping. The
  lab holds data in a relay instead (relay.py): nftables in `host`'s namespace redirects its TCP
  connections to `peers` to a relay in the same namespace, which reads each connection's real
  destination (SO_ORIGINAL_DST), connects there, and forwards every chunk in each direction
  `delay_ms` after it arrived. The delay is real time on real sockets, so what a client measures
  (request round trips grow by 2 x delay_ms, a ping can arrive after the session's deadline) is
  what a slow WAN link does to it; TCP's own handshakes and acks are not delayed (the relay
  answers them), and a connect succeeds at once even when the peer is unreachable (the relay
  then closes it). Connections opened before the first slow() to a peer are reset once (`ss
  -K`), so that they come back through the relay; heal() sets the delay back to 0 and leaves
  the route (a pass-through relay), so healing drops no connection.
"""

from __future__ import annotations

import ipaddress
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from zkconsumer.testing.netlab import LabError, LabHost, sh
from zkconsumer.testing.relay import MARK, RelayProcess

if TYPE_CHECKING:
    from zkconsumer.testing.netlab import NetLab

log = logging.getLogger(__name__)

RELAY_PORT = 15999  # where a host's relay listens, on its own loopback
_ids = itertools.count(1)


class Fault:
    """One fault in force until `heal()` (idempotent; also on leaving a `with` block).

    `began` and `healed_at` are time.monotonic() readings (CLOCK_MONOTONIC, the clock the chaos
    members stamp their deliveries with), for lining a fault up with what members did.
    """

    def __init__(self, lab: NetLab, kind: str, description: str) -> None:
        self.lab = lab
        self.kind = kind
        self.description = description
        self.began = time.monotonic()
        self.healed_at: float | None = None
        self._undo: list[Callable[[], None]] = []

    @property
    def healed(self) -> bool:
        return self.healed_at is not None

    def heal(self) -> None:
        if self.healed:
            return
        errors = []
        for undo in reversed(self._undo):
            try:
                undo()
            except (LabError, OSError, RuntimeError) as exc:  # a namespace or relay already gone
                errors.append(str(exc))
        self.healed_at = time.monotonic()
        if self in self.lab.faults:
            self.lab.faults.remove(self)
        log.info("healed %s after %.2fs", self.description, self.healed_at - self.began)
        if errors:
            log.warning("healing %s: %s", self.description, "; ".join(errors))

    def __enter__(self) -> Fault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal()

    def __repr__(self) -> str:
        return f"<Fault {self.description}{' (healed)' if self.healed else ''}>"


def _addresses(lab: NetLab, peers: Iterable[LabHost | str], besides: LabHost | None = None) -> list[str]:
    """The lab addresses of `peers` (hosts or address strings), without `besides`' own."""
    assert lab.subnet is not None
    out = []
    for peer in peers:
        address = peer.address if isinstance(peer, LabHost) else str(peer)
        if ipaddress.ip_address(address) not in lab.subnet:
            raise LabError(f"{address} is not in lab {lab.name} ({lab.subnet}): faults only touch lab addresses")
        if besides is None or address != besides.address:
            out.append(address)
    if not out:
        raise ValueError("a fault needs at least one peer other than the host itself")
    return sorted(set(out), key=ipaddress.ip_address)


def _filter_table(host: LabHost, fault: Fault, match_in: str, match_out: str) -> None:
    """Add a table of two base chains (input, output) dropping what the matches select; undo deletes it."""
    name = f"zkc_f{next(_ids)}"
    host.nft(
        f"table inet {name} {{\n"
        f"  chain in {{ type filter hook input priority -10; policy accept; {match_in} drop; }}\n"
        f"  chain out {{ type filter hook output priority -10; policy accept; {match_out} drop; }}\n"
        "}\n"
    )
    fault._undo.append(lambda: host.nft(f"delete table inet {name}\n"))


def _start(lab: NetLab, kind: str, description: str, build: Callable[[Fault], None]) -> Fault:
    fault = Fault(lab, kind, description)
    try:
        build(fault)
    except BaseException:
        fault.heal()
        raise
    lab.faults.append(fault)
    log.info("fault: %s", description)
    return fault


def _set(addresses: list[str]) -> str:
    return "{ " + ", ".join(addresses) + " }"


def cut(lab: NetLab, host: LabHost, peers: Iterable[LabHost | str]) -> Fault:
    """Drop every packet between `host` and `peers`, both directions (rules in `host`'s namespace)."""
    addresses = _addresses(lab, peers, host)
    peers_set = _set(addresses)
    return _start(
        lab,
        "cut",
        f"cut {host.name} from {', '.join(addresses)}",
        lambda f: _filter_table(host, f, f"ip saddr {peers_set}", f"ip daddr {peers_set}"),
    )


def isolate(lab: NetLab, host: LabHost, *, keep_root: bool = True) -> Fault:
    """Cut `host` from the whole lab (but for this process's own address when `keep_root`)."""
    subnet = lab.subnet
    spare = f" ip saddr != {lab.root_address}" if keep_root else ""
    spare_out = f" ip daddr != {lab.root_address}" if keep_root else ""
    return _start(
        lab,
        "isolate",
        f"isolate {host.name}" + (" (the harness still reaches it)" if keep_root else ""),
        lambda f: _filter_table(host, f, f"ip saddr {subnet}{spare}", f"ip daddr {subnet}{spare_out}"),
    )


def split(lab: NetLab, side_a: Iterable[LabHost], side_b: Iterable[LabHost]) -> Fault:
    """Partition the lab: every host of `side_a` cut from every host of `side_b` (rules on both sides)."""
    a, b = list(side_a), list(side_b)
    if not a or not b or set(a) & set(b):
        raise ValueError("split() needs two non-empty sides without a host in common")

    def build(fault: Fault) -> None:
        for side, other in ((a, b), (b, a)):
            others = _set(_addresses(lab, other))
            for host in side:
                _filter_table(host, fault, f"ip saddr {others}", f"ip daddr {others}")

    names = " ".join(h.name for h in a), " ".join(h.name for h in b)
    return _start(lab, "split", f"split {names[0]} | {names[1]}", build)


def drop(lab: NetLab, host: LabHost, peers: Iterable[LabHost | str], percent: int) -> Fault:
    """Drop `percent` % of the packets between `host` and `peers` at random, in each direction
    (a request and its answer both crossing: (1 - p)^2 of exchanges get through untouched)."""
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in 1..100, got {percent}")
    addresses = _addresses(lab, peers, host)
    peers_set = _set(addresses)
    loss = f"numgen random mod 100 < {percent}"
    return _start(
        lab,
        "drop",
        f"drop {percent}% between {host.name} and {', '.join(addresses)}",
        lambda f: _filter_table(host, f, f"ip saddr {peers_set} {loss}", f"ip daddr {peers_set} {loss}"),
    )


def relay_for(lab: NetLab, host: LabHost) -> RelayProcess:
    """`host`'s relay, started (delay 0 for everything) with its redirect table on first use."""
    relay = lab.relays.get(host.netns)
    if relay is None:
        relay = RelayProcess(host.command, RELAY_PORT, name=f"relay-{host.name}").start()
        lab.relays[host.netns] = relay
        # Locally made TCP connections to the set's addresses go to the relay; the relay's own
        # upstream connections carry MARK and pass.
        host.nft(
            "table ip zkc_relay {\n"
            "  set peers { type ipv4_addr; }\n"
            "  chain out {\n"
            "    type nat hook output priority -100; policy accept;\n"
            f"    meta mark {MARK:#x} return\n"
            f"    ip daddr @peers meta l4proto tcp redirect to :{RELAY_PORT}\n"
            "  }\n"
            "}\n"
        )
    return relay


def route_through_relay(lab: NetLab, host: LabHost, peers: Iterable[LabHost | str], *, reset: bool = True) -> None:
    """Send `host`'s TCP connections to `peers` through its relay from now on (delay 0 until
    slow() says otherwise). With `reset`, connections already open to those peers are reset
    (`ss -K`): they reconnect through the relay. Call it before starting a member to have
    every connection relayed without any reset."""
    addresses = _addresses(lab, peers, host)
    relay = relay_for(lab, host)
    new = [a for a in addresses if a not in relay.routed]
    if not new:
        return
    host.nft(f"add element ip zkc_relay peers {_set(new)}\n")
    relay.routed.update(new)
    if reset:
        for address in new:
            sh(host.command(["ss", "-K", "-t", "dst", address]), check=False)


def slow(lab: NetLab, host: LabHost, peers: Iterable[LabHost | str], delay_ms: int, *, reset: bool = True) -> Fault:
    """Hold each chunk of TCP data between `host` and `peers` `delay_ms` in each direction (see the
    module's docstring); heal() sets the delay back to 0."""
    if delay_ms < 0:
        raise ValueError("delay_ms must be >= 0")
    addresses = _addresses(lab, peers, host)

    def build(fault: Fault) -> None:
        route_through_relay(lab, host, addresses, reset=reset)
        relay = lab.relays[host.netns]
        for address in addresses:
            previous = relay.delays.get(address, 0)
            relay.set_delay(address, delay_ms)
            fault._undo.append(lambda a=address, p=previous: relay.set_delay(a, p))  # type: ignore[misc]

    return _start(lab, "slow", f"slow {host.name} <-> {', '.join(addresses)} by {delay_ms} ms each way", build)
