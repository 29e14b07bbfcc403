"""`python -m zkconsumer.testing up|down|status`: a local cluster for people trying zkconsumer."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

import click

from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.jars import JarsMissingError, jar_dir
from zkconsumer.testing.probes import ClusterStartError, zookeeper_ruok
from zkconsumer.testing.versions import DEFAULT_KAFKA, kafka_release


def state_dir() -> Path:
    """Where the running cluster is recorded: $ZKCONSUMER_CLUSTER_DIR, else .zkconsumer-cluster/ here."""
    return Path(os.environ.get("ZKCONSUMER_CLUSTER_DIR", ".zkconsumer-cluster"))


def _state_file() -> Path:
    return state_dir() / "state.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _err(text: str) -> None:
    click.echo(text, err=True)


@click.group(help="Run a local ZooKeeper + Kafka (ZooKeeper mode) cluster from Kafka's jars.")
def main() -> None:
    """python -m zkconsumer.testing: the commands below."""


@main.command(help="Start ZooKeeper and brokers in the background; print zookeeper.connect and bootstrap.servers.")
@click.option("--brokers", type=click.IntRange(min=1), default=1, show_default=True, help="Number of brokers.")
@click.option("--chroot", default="/kafka", show_default=True, help='ZooKeeper chroot, or "none".')
def up(brokers: int, chroot: str) -> None:
    began = time.monotonic()
    state_file = _state_file()
    if state_file.exists():
        _err(f"a cluster is already recorded in {state_file}; run `down` first")
        sys.exit(1)
    state_file.parent.mkdir(parents=True, exist_ok=True)
    # kazoo warns "Connection dropped" while the probes wait for ZooKeeper to listen: harmless here.
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)
    fetching = 0.0
    try:
        fetch_began = time.monotonic()
        jar_dir(kafka_release(DEFAULT_KAFKA).jar_set, report=_err)  # the first run fetches, saying so
        fetching = time.monotonic() - fetch_began
        cluster = LocalCluster(
            brokers=brokers, chroot=None if chroot in ("", "none") else chroot, workdir=state_dir().resolve() / "run"
        )
        cluster.start(detach=True)
    except (ClusterStartError, JarsMissingError) as exc:
        _err(f"cluster did not start: {exc}")
        sys.exit(1)
    state = {
        "zookeeper_connect": cluster.zookeeper_connect,
        "bootstrap_servers": cluster.bootstrap_servers,
        "zookeeper_port": cluster.zookeeper.port,
        # brokers first: `down` stops them before ZooKeeper
        "pids": [b.process.pid for b in cluster.brokers] + [cluster.zookeeper.process.pid],
        "logs": str(cluster.workdir),
    }
    state_file.write_text(json.dumps(state, indent=2))
    took = time.monotonic() - began
    fetched = f", {fetching:.1f}s of it fetching jars" if fetching >= 1.0 else ""
    click.echo(f"zookeeper.connect={state['zookeeper_connect']}")
    click.echo(f"bootstrap.servers={state['bootstrap_servers']}")
    click.echo(f"logs in {state['logs']} (ready in {took:.1f}s{fetched})")


@main.command(help="Stop the recorded cluster.")
def down() -> None:
    state_file = _state_file()
    if not state_file.exists():
        click.echo("no cluster recorded; nothing to stop")
        return
    state = json.loads(state_file.read_text())
    for pid in state["pids"]:
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)
            for _ in range(150):
                if not _alive(pid):
                    break
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
    state_file.unlink()
    click.echo("cluster stopped")


@main.command(help="Print the addresses and whether the cluster runs (exit 1 if any part is down).")
def status() -> None:
    state_file = _state_file()
    if not state_file.exists():
        click.echo("no cluster recorded")
        sys.exit(1)
    state = json.loads(state_file.read_text())
    alive = [_alive(pid) for pid in state["pids"]]
    zk_ok = zookeeper_ruok(state["zookeeper_port"])
    click.echo(f"zookeeper.connect={state['zookeeper_connect']} ({'up' if zk_ok else 'DOWN'})")
    click.echo(f"bootstrap.servers={state['bootstrap_servers']} ({sum(alive[:-1])}/{len(alive) - 1} brokers running)")
    click.echo(f"logs in {state['logs']}")
    sys.exit(0 if all(alive) and zk_ok else 1)


if __name__ == "__main__":
    main(prog_name="python -m zkconsumer.testing")
