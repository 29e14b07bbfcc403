"""`python -m zkconsumer.testing up|down|status`: a local cluster for people trying zkconsumer."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from zkconsumer.testing.cluster import ClusterStartError, LocalCluster, zookeeper_ruok
from zkconsumer.testing.jars import JarsMissingError

STATE_DIR = Path(os.environ.get("ZKCONSUMER_CLUSTER_DIR", ".zkconsumer-cluster"))
STATE_FILE = STATE_DIR / "state.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def up(args: argparse.Namespace) -> int:
    if STATE_FILE.exists():
        print(f"a cluster is already recorded in {STATE_FILE}; run `down` first", file=sys.stderr)
        return 1
    chroot = None if args.chroot in ("", "none") else args.chroot
    try:
        cluster = LocalCluster(brokers=args.brokers, chroot=chroot, workdir=STATE_DIR.resolve() / "run")
        cluster.start(detach=True)
    except (ClusterStartError, JarsMissingError) as exc:
        print(f"cluster did not start: {exc}", file=sys.stderr)
        return 1
    state = {
        "zookeeper_connect": cluster.zookeeper_connect,
        "bootstrap_servers": cluster.bootstrap_servers,
        "zookeeper_port": cluster.zookeeper.port,
        # brokers first: `down` stops them before ZooKeeper
        "pids": [b.process.pid for b in cluster.brokers] + [cluster.zookeeper.process.pid],
        "logs": str(cluster.workdir),
    }
    STATE_FILE.write_text(json.dumps(state, indent=2))
    print(f"zookeeper.connect={state['zookeeper_connect']}")
    print(f"bootstrap.servers={state['bootstrap_servers']}")
    print(f"logs in {state['logs']} (started in {cluster.start_seconds:.1f}s)")
    return 0


def down(_args: argparse.Namespace) -> int:
    if not STATE_FILE.exists():
        print("no cluster recorded; nothing to stop")
        return 0
    state = json.loads(STATE_FILE.read_text())
    for pid in state["pids"]:
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)
            for _ in range(150):
                if not _alive(pid):
                    break
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
    STATE_FILE.unlink()
    print("cluster stopped")
    return 0


def status(_: argparse.Namespace) -> int:
    if not STATE_FILE.exists():
        print("no cluster recorded")
        return 1
    state = json.loads(STATE_FILE.read_text())
    alive = [_alive(pid) for pid in state["pids"]]
    zk_ok = zookeeper_ruok(state["zookeeper_port"])
    print(f"zookeeper.connect={state['zookeeper_connect']} ({'up' if zk_ok else 'DOWN'})")
    print(f"bootstrap.servers={state['bootstrap_servers']} ({sum(alive[:-1])}/{len(alive) - 1} brokers running)")
    print(f"logs in {state['logs']}")
    return 0 if all(alive) and zk_ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zkconsumer.testing", description="Run a local ZooKeeper + Kafka (ZooKeeper mode) cluster."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start ZooKeeper and brokers in the background")
    p_up.add_argument("--brokers", type=int, default=1)
    p_up.add_argument("--chroot", default="/kafka", help='ZooKeeper chroot, or "none"')
    p_up.set_defaults(func=up)
    sub.add_parser("down", help="stop the recorded cluster").set_defaults(func=down)
    sub.add_parser("status", help="print addresses and whether it runs").set_defaults(func=status)
    args = parser.parse_args(argv)
    STATE_DIR.mkdir(exist_ok=True)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
