"""What `offsets reset` and `groups describe` cost to import and to run, for one or more checkouts side by side.

    .venv/bin/python scripts/bench/cli_timing.py --rounds 15 base=/tmp/old-checkout after=.

Starts a local cluster (ZooKeeper + one Kafka broker, from the jars), creates one topic of
--partitions partitions with 100 messages in each and commits an offset of every partition for the
group `bench` (no members). Then, in rounds that alternate the checkouts' order, for each checkout
(a NAME=PATH pair: the command runs with PYTHONPATH=PATH) and each of the two commands:

Each runs in its checkout's folder (`python -c` puts the working directory first on sys.path).

- import: `python -X importtime -c 'import zkconsumer.cli.offsets.reset'` (or groups.describe),
  the sum of every module's self time, that of zkconsumer's own modules (own_import_ms: what a
  change to the package moves; the rest is confluent-kafka, kazoo, click and the standard
  library), and how many modules it loads;
- help: wall time of `zkconsumer offsets reset --help` (or groups describe), start to exit;
- run: wall and CPU time (user + system) of the command itself against the cluster:
  `offsets reset -g bench -t bench --to-earliest` (a plan: nothing written) and
  `groups describe -g bench`.

One line per checkout, command and figure: median and minimum over the rounds. The exit status of
each run is checked to be the same for every checkout.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.kafka import produce_bulk  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402
from zkconsumer.zookeeper.guarded_write import write_offset_guarded  # noqa: E402

TOPIC, GROUP = "bench", "bench"
MODULES = {"reset": "zkconsumer.cli.offsets.reset", "describe": "zkconsumer.cli.groups.describe"}
VERBS = {"reset": ["offsets", "reset"], "describe": ["groups", "describe"]}
CLI = "import sys; from zkconsumer.cli.main import main; sys.argv[0] = 'zkconsumer'; main()"


def _env(tree: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ZKCONSUMER_ZOOKEEPER", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = tree
    return env


def import_cost(tree: str, module: str) -> tuple[int, int, int]:
    """(sum of the modules' self times in µs, that of zkconsumer's own modules, modules loaded) for
    importing `module`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        env=_env(tree),
        cwd=tree,  # `-c` puts the working directory first on sys.path
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:") and "self [us]" not in line]
    selves = [(int(line.split(":")[1].split("|")[0]), line.split("|")[2].strip()) for line in lines]
    own = sum(us for us, name in selves if name.startswith("zkconsumer"))
    return sum(us for us, _ in selves), own, len(lines)


def timed(tree: str, args: list[str]) -> tuple[float, float, int]:
    """(wall ms, CPU ms, exit status) of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], env=_env(tree), cwd=tree, capture_output=True, check=False
    )
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", default=[f"this={ROOT}"], help="NAME=PATH of each checkout")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--partitions", type=int, default=12)
    args = parser.parse_args()
    trees = dict(pair.split("=", 1) for pair in args.trees)
    figures: dict[tuple[str, str, str], list[float]] = {}
    statuses: dict[str, set[int]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(brokers=1, chroot="/timing", workdir=Path(tmp) / "cluster") as cluster,
    ):
        cluster.create_topic(TOPIC, args.partitions)
        produce_bulk(cluster.bootstrap_servers, TOPIC, 100 * args.partitions, 100, args.partitions)
        client = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        try:
            for partition in range(args.partitions):
                assert write_offset_guarded(client, GROUP, TOPIC, partition, 50) is None
        finally:
            close_quietly(client, 10.0)
        runs = {
            "reset": ["--zookeeper", cluster.zookeeper_connect, "-g", GROUP, "-t", TOPIC, "--to-earliest"],
            "describe": ["--zookeeper", cluster.zookeeper_connect, "-g", GROUP],
        }
        for number in range(args.rounds):
            order = list(trees.items()) if number % 2 == 0 else list(reversed(trees.items()))
            for name, tree in order:
                for command, module in MODULES.items():
                    import_us, own_us, modules = import_cost(tree, module)
                    figures.setdefault((name, command, "import_ms"), []).append(import_us / 1000)
                    figures.setdefault((name, command, "own_import_ms"), []).append(own_us / 1000)
                    figures.setdefault((name, command, "modules"), []).append(modules)
                    help_ms, _, _ = timed(tree, [*VERBS[command], "--help"])
                    figures.setdefault((name, command, "help_ms"), []).append(help_ms)
                    wall, cpu, status = timed(tree, [*VERBS[command], *runs[command]])
                    figures.setdefault((name, command, "run_ms"), []).append(wall)
                    figures.setdefault((name, command, "run_cpu_ms"), []).append(cpu)
                    statuses.setdefault(command, set()).add(status)
    for key in sorted(figures):
        values = figures[key]
        print(*key, f"median={statistics.median(values):.1f}", f"min={min(values):.1f}", f"n={len(values)}")
    for command, seen in sorted(statuses.items()):
        print(command, "exit", sorted(seen), "(the same for every checkout)" if len(seen) == 1 else "DIFFERS")


if __name__ == "__main__":
    main()
