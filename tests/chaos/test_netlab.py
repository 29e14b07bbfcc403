"""The network lab on its own (no JVM): its layout and cleanup, and that each fault cuts and heals what it says."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess

import pytest

from harness.lab_probe import probe, start_echo
from zkconsumer.testing import netfaults, netlab
from zkconsumer.testing.netlab import LabError, LabHost, NetLab

pytestmark = [pytest.mark.chaos]


@pytest.fixture(scope="module")
def hosts(lab: NetLab) -> dict[str, LabHost]:
    return {name: lab.host(name) for name in ("a", "b", "c", "d")}


def ping(host: LabHost | None, address: str, count: int = 3, interval: float = 0.02) -> int:
    """Echo replies received out of `count` (host None: from this process, the root namespace)."""
    argv = ["ping", "-n", "-q", "-c", str(count), "-i", str(interval), "-W", "1", address]
    done = subprocess.run(host.command(argv) if host else argv, capture_output=True, text=True, timeout=60)
    match = re.search(r"(\d+) received", done.stdout)
    return int(match.group(1)) if match else 0


def test_layout_reaches_only_the_lab(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b = hosts["a"], hosts["b"]
    assert lab.subnet is not None
    assert ipaddress.ip_address(a.address) in lab.subnet and ipaddress.ip_address(b.address) in lab.subnet
    assert ping(a, b.address) == 3 and ping(None, a.address) == 3 and ping(a, lab.root_address) == 3
    # Nothing outside the lab: no route there, and the guard table would drop it anyway.
    outside = a.run(["ping", "-n", "-c", "1", "-W", "1", "192.0.2.1"])
    assert outside.returncode != 0 and "unreachable" in outside.stderr.lower()
    assert "zkc_guard" in a.run(["nft", "list", "tables"]).stdout
    # The root namespace holds exactly one route of the lab: its /24 through the lab's veth.
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    assert [line for line in routes.splitlines() if lab.name in line] == [
        line for line in routes.splitlines() if line.startswith(f"{lab.subnet} dev {lab.name}")
    ]
    assert len([line for line in routes.splitlines() if lab.name in line]) == 1
    assert "inet6" not in a.run(["ip", "addr"]).stdout


def test_cut_drops_both_directions_and_heals(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    echo = start_echo(b)
    try:
        with netfaults.cut(lab, a, [b]) as fault:
            assert ping(a, b.address) == 0 and ping(b, a.address) == 0
            assert ping(a, c.address) == 3 and ping(b, c.address) == 3  # only the named pair
            assert not probe(a, "tcp", f"{b.address}:7000", timeout=2)["ok"]
            assert probe(c, "tcp", f"{b.address}:7000", timeout=2)["ok"]
        assert fault.healed and fault not in lab.faults
        assert ping(a, b.address) == 3 and probe(a, "tcp", f"{b.address}:7000", timeout=2)["ok"]
    finally:
        echo.kill()


def test_isolate_keeps_the_harness_unless_told(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    with netfaults.isolate(lab, a):
        assert ping(a, b.address) == 0 and ping(c, a.address) == 0
        assert ping(None, a.address) == 3  # the harness still sees it
    with netfaults.isolate(lab, a, keep_root=False):
        assert ping(None, a.address) == 0 and ping(a, c.address) == 0
    assert ping(a, b.address) == 3 and ping(None, a.address) == 3


def test_split_keeps_each_side_whole(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b, c, d = hosts["a"], hosts["b"], hosts["c"], hosts["d"]
    fault = netfaults.split(lab, [a, b], [c, d])
    try:
        assert ping(a, b.address) == 3 and ping(c, d.address) == 3
        assert all(ping(x, y.address, count=2) == 0 for x in (a, b) for y in (c, d))
        assert ping(d, a.address, count=2) == 0
    finally:
        fault.heal()
    assert ping(a, c.address) == 3 and ping(d, b.address) == 3


def test_drop_loses_the_fraction_it_says(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    with netfaults.drop(lab, a, [b], 30):
        got = ping(a, b.address, count=300, interval=0.005)
        assert ping(a, c.address, count=50, interval=0.005) == 50
    # Each echo crosses the rule twice: 0.7 * 0.7 = 49 % come back (sd about 3 % of 300 pings).
    assert 0.35 * 300 < got < 0.63 * 300, got
    assert ping(a, b.address, count=50, interval=0.005) == 50


def test_slow_adds_the_delay_it_claims(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    a, b = hosts["a"], hosts["b"]
    echo = start_echo(b, 7001)
    try:
        direct = probe(a, "rtt", f"{b.address}:7001", count=20)
        measured = {}
        for delay in (100, 250):
            with netfaults.slow(lab, a, [b], delay):
                measured[delay] = probe(a, "rtt", f"{b.address}:7001", count=10, timeout=10)
        healed = probe(a, "rtt", f"{b.address}:7001", count=20)
    finally:
        echo.kill()
    print(f"echo round trip: direct {direct}, slowed {measured}, healed {healed}")
    assert direct["median_ms"] < 20
    for delay, answer in measured.items():
        # A round trip crosses the relay twice; asyncio wakes a little late, never early. How late
        # depends on the machine's load: 1-5 ms idle, over 100 ms at a load of 16 on 2 cores.
        assert 2 * delay <= answer["min_ms"] and answer["median_ms"] < 2 * delay * 1.5 + 50, (delay, answer)
    assert healed["median_ms"] < 20  # delay 0: the relay still forwards, without holding anything


def test_faults_refuse_addresses_outside_the_lab(lab: NetLab, hosts: dict[str, LabHost]) -> None:
    with pytest.raises(LabError, match="not in lab"):
        netfaults.cut(lab, hosts["a"], ["192.0.2.1"])
    with pytest.raises(LabError, match="not in lab"):
        netfaults.slow(lab, hosts["a"], ["127.0.0.1"], 10)


def test_a_new_lab_removes_stale_ones_and_its_own(lab: NetLab) -> None:
    # A lab whose owner died (a state file naming a finished process) with a namespace left over.
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netlab.PREFIX}fffff"
    subprocess.run(["ip", "netns", "add", f"{stale}-x"], check=True)
    (netlab.STATE_DIR / f"{stale}.json").write_text(json.dumps({"pid": dead.pid, "started": "0", "subnet": ""}))
    second = NetLab().create()
    try:
        assert second.subnet != lab.subnet
        second.host("x")
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"{stale}-x" not in names and f"{second.name}-x" in names
        assert lab.hosts["a"].netns in names  # a live lab is left alone
    finally:
        second.close()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    assert second.name not in names and second.name not in links
    assert not second.state_file.exists() and os.path.exists(lab.state_file)
    assert not list(netlab.STATE_DIR.glob(f"{stale}*"))
