"""What a ZooKeeper blip costs the exporter: requests and time to fresh after a reconnect in the same session, watches re-armed or not.

    .venv/bin/python scripts/bench/exporter_blip.py --groups 200 --partitions 100 --rounds 3

Starts one ZooKeeper server (from the jars; no broker: the exporter runs without log ends, so
only its ZooKeeper side is measured), writes --partitions offset nodes for each of --groups
groups (and the topic's partition map), and puts a relay in front of it. Each round runs both
contenders, alternating which goes first: an exporter (the real Exporter, --interval far off, so
no tick falls in the measurement) with the watch re-arm (`rearm`) and with
ZKCONSUMER_KAZOO_REARM=0 (`stock`, kazoo's own reconnect). Each reads everything once, then the
relay is stopped, --commits offset nodes of random groups are written, and the relay restarted
--cut seconds later: the same session comes back. Measured from the reconnect:

- fresh_s: until every commit made during the cut shows in the exporter's view;
- requests: ZooKeeper requests the exporter sent from the cut until it has been quiet a second.

Prints a line per round and contender, the medians, the load; last line:
groups= partitions= commits= rounds= rearm_requests= stock_requests= rearm_fresh_s= stock_fresh_s= loadavg=
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kazoo.protocol.states import KazooState  # noqa: E402

from zkconsumer.exporter.exporter import Exporter  # noqa: E402
from zkconsumer.testing.cluster import LOG4J  # noqa: E402
from zkconsumer.testing.ensemble import ZooKeeperEnsemble  # noqa: E402
from zkconsumer.testing.probes import free_port  # noqa: E402
from zkconsumer.testing.relay import RelayProcess  # noqa: E402
from zkconsumer.testing.versions import DEFAULT_KAFKA, kafka_release, zookeeper_release  # noqa: E402
from zkconsumer.zookeeper import internals, znodes  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402

TOPIC = "blip"
CONTENDERS = ("rearm", "stock")


def write_nodes(client: object, groups: int, partitions: int) -> None:
    """The topic's partition map and every group's offset node of every partition, pipelined."""
    assignment = {str(p): [0] for p in range(partitions)}
    client.create(
        znodes.topic_path(TOPIC), json.dumps({"version": 1, "partitions": assignment}).encode(), makepath=True
    )  # type: ignore[attr-defined]
    pending = []
    for g in range(groups):
        client.ensure_path(znodes.offsets_path(f"blip-{g}", TOPIC))  # type: ignore[attr-defined]
        for p in range(partitions):
            pending.append(client.create_async(znodes.offset_path(f"blip-{g}", TOPIC, p), b"5"))  # type: ignore[attr-defined]
        if len(pending) > 5000:
            for result in pending:
                result.get(timeout=60)
            pending = []
    for result in pending:
        result.get(timeout=60)


def wait(what: str, done: object, timeout_s: float) -> None:
    began = time.monotonic()
    while not done():  # type: ignore[operator]
        if time.monotonic() - began > timeout_s:
            raise SystemExit(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.01)


def one_blip(contender: str, server: str, writer: object, args: argparse.Namespace, seed: int) -> tuple[int, float]:
    """(requests from the cut until quiet, seconds from the reconnect until every commit shows)."""
    os.environ[internals.REARM_SWITCH] = "1" if contender == "rearm" else "0"
    port = free_port()
    relay: RelayProcess | None = RelayProcess(list, port, target=server, name="zk-relay").start()
    client = connect(f"127.0.0.1:{port}", session_timeout_s=60.0, connect_timeout_s=10.0)
    exporter = Exporter(client, None, host="127.0.0.1", port=0, interval_s=args.interval, window_s=60.0)
    assert exporter.rearm.enabled is (contender == "rearm")
    exporter.start()
    try:
        exporter.wait_for_refresh(0, timeout_s=600)
        time.sleep(0.5)
        rng = random.Random(seed)
        commits = [(f"blip-{rng.randrange(args.groups)}", rng.randrange(args.partitions)) for _ in range(args.commits)]
        value = 100 + 2 * seed + CONTENDERS.index(contender)  # not what the other contender wrote
        before = exporter.view.requests
        session = client.client_id
        connected: list[float] = []  # when kazoo reconnected (its thread), not when this one noticed

        def on_state(state: KazooState) -> None:
            if state == KazooState.CONNECTED and not connected:
                connected.append(time.monotonic())

        client.add_listener(on_state)
        relay.stop()
        relay = None
        wait("the cut was never noticed", lambda: client.state != KazooState.CONNECTED, 10)
        for group, partition in commits:
            writer.set(znodes.offset_path(group, TOPIC, partition), str(value).encode())  # type: ignore[attr-defined]
        time.sleep(args.cut)
        relay = RelayProcess(list, port, target=server, name="zk-relay").start()
        wait("no reconnect", lambda: bool(connected), 30)
        reconnected = connected[0]
        if client.client_id != session:
            raise SystemExit("a new session: the cut was longer than the session")

        def fresh() -> bool:
            groups = exporter.view.state.groups
            return all(
                groups[g].last.sample.partitions[(TOPIC, p)].committed == value for g, p in commits if g in groups
            ) and all(g in groups for g, _ in commits)

        wait("the commits made during the cut never showed", fresh, 120)
        fresh_s = time.monotonic() - reconnected
        last, quiet_since = exporter.view.requests, time.monotonic()
        while time.monotonic() - quiet_since < 1.0:
            time.sleep(0.1)
            if exporter.view.requests != last:
                last, quiet_since = exporter.view.requests, time.monotonic()
        return last - before, fresh_s
    finally:
        exporter.stop(timeout_s=30)
        close_quietly(client, 10)
        if relay is not None:
            relay.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--commits", type=int, default=20, help="offset nodes written during each cut")
    parser.add_argument("--cut", type=float, default=1.0, help="seconds the link stays down")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=300.0, help="the exporter's tick (none falls in a round)")
    args = parser.parse_args()
    results: dict[str, list[tuple[int, float]]] = {c: [] for c in CONTENDERS}
    with tempfile.TemporaryDirectory(prefix="exporter-blip-") as tmp:
        workdir = Path(tmp)
        (workdir / "log4j.properties").write_text(LOG4J)
        kafka = kafka_release(DEFAULT_KAFKA)
        ensemble = ZooKeeperEnsemble(workdir, 1, release=zookeeper_release(None, kafka), broker_jars=kafka.jar_set)
        ensemble.start(timeout=120)
        try:
            writer = connect(ensemble.hosts, session_timeout_s=30.0, connect_timeout_s=10.0)
            try:
                write_nodes(writer, args.groups, args.partitions)
                for number in range(args.rounds):
                    order = CONTENDERS if number % 2 == 0 else CONTENDERS[::-1]
                    for contender in order:
                        requests, fresh_s = one_blip(contender, ensemble.hosts, writer, args, seed=number)
                        results[contender].append((requests, fresh_s))
                        print(
                            f"round {number + 1} {contender}: requests={requests} fresh_s={fresh_s:.3f} "
                            f"loadavg={os.getloadavg()[0]:.2f}",
                            flush=True,
                        )
            finally:
                close_quietly(writer, 10)
        finally:
            ensemble.stop()
    medians = {
        c: (statistics.median(r for r, _ in results[c]), statistics.median(f for _, f in results[c]))
        for c in CONTENDERS
    }
    for contender, (requests, fresh_s) in medians.items():
        print(f"median {contender}: requests={requests:g} fresh_s={fresh_s:.3f}")
    print(
        f"groups={args.groups} partitions={args.partitions} commits={args.commits} rounds={args.rounds} "
        f"rearm_requests={medians['rearm'][0]:g} stock_requests={medians['stock'][0]:g} "
        f"rearm_fresh_s={medians['rearm'][1]:.3f} stock_fresh_s={medians['stock'][1]:.3f} "
        f"loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
