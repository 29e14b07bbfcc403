"""Streaming queries of the zkconsumer source under broker and group trouble on three brokers, each checked
against the produced sequence: the query's outcome, rows written, loss and duplicates.

    .venv/bin/python scripts/bench/spark_trouble.py [--master local[2]] [--only rolling,timestamp,...]

Scenarios (each its own topic, group and parquet query; the sink's committed rows are compared with the
log's messages, whose values carry the sequence numbers `<topic>-<i>` produced):

  rolling      a rolling restart of all three brokers (one at a time, gracefully) while the query runs
  timestamp    a query started with startingTimestamp; partition 0's leader killed (kill -9) as its member joins:
               the timestamp look-ups meet the election; rows stamped before the time must not be read
  offline      one partition's only broker down for --down-seconds (default 60): the other partition is
               read meanwhile, the query lives on, and every row is read once the broker is back
  available    an AvailableNow run started while a crashed run's member and owner nodes live: it waits,
               then reads every row once they go
  available-stuck  the same with the crashed run's nodes living past the run's wait bound: it must fail
               by name (AvailableNowIncomplete), never end as a success having read nothing

Duplicates count as failures: in these runs nothing is shared with another member, so the docs'
at-least-once-across-members case cannot arise and every row must be in the sink exactly once.

By default on a standalone Spark cluster from the pip install (a master and two 1-core workers,
harness.spark_cluster; zkconsumer shipped as a wheel, as users do), --master local[2] runs in the
driver's JVM. ZooKeeper and three ZooKeeper-mode brokers (every topic on all three,
min.insync.replicas 2) start from the Maven jars. Last line:
    scenarios=<n> failed=<n> lost=<n> duplicated=<n> silent_success=<n> master=... loadavg=<median>
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: tests/harness

from harness.spark_sink import committed_rows, parquet_query  # noqa: E402
from zkconsumer.coordinator.subscription import StaticSubscription, encode_registration  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402

# Consumer settings that make group changes quick (the defaults are production-sized).
FAST = {"zookeeper.session.timeout.ms": "6000", "rebalance.backoff.ms": "500", "rebalance.max.retries": "20"}
SCENARIOS = ("rolling", "timestamp", "offline", "available", "available-stuck")


@dataclasses.dataclass
class Outcome:
    """What one scenario's query did, checked against the log."""

    name: str
    said: str = "running"  # what Spark reported: its exception, or how the query ended
    rows: int = 0  # rows the sink committed
    expected: int = 0  # rows it should hold
    lost: int = 0
    duplicated: int = 0
    strays: int = 0  # rows that should not be there (before a starting time, not in the log)
    silent_success: bool = False
    failures: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = dataclasses.field(default_factory=list)


def source_end(query: Any) -> dict[int, int]:
    """The last micro-batch's end offset per partition (one topic, one source)."""
    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return {}
    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    return {int(k.rpartition("/")[2]): v for k, v in (end or {}).items() if not k.startswith("@")}


def log_ends(cluster: LocalCluster, topic: str) -> dict[int, int]:
    return {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}


def wait_until(condition: Callable[[], object], timeout: float, what: str, query: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if query is not None and query.exception() is not None:
            raise ScenarioFailed(f"the query failed waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


class ScenarioFailed(Exception):
    """A scenario's expectation broke; the message says which."""


def reader(spark: Any, cluster: LocalCluster, folder: Path, topic: str, **options: object) -> Any:
    """The source over `topic`, in the group of the same name, told the query's checkpoint (as docs/spark.md
    asks: its stop then commits the last batch the sink completed)."""
    load = (
        spark.readStream.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", topic)
        .option("topics", topic)
        .option("checkpointLocation", str(folder / "checkpoint"))
    )
    for key, value in {**FAST, **options}.items():
        load = load.option(key, str(value))
    return load.load()


def check_sink(outcome: Outcome, cluster: LocalCluster, topic: str, folder: Path, wanted: set[bytes]) -> None:
    """Compare the sink's committed rows with the log: every message whose value is in `wanted` once,
    nothing else. `wanted` are the values of the acknowledged messages the query must read."""
    rows = committed_rows(folder / "out")
    log = {(m.partition, m.offset): m.value for m in kafka.read_all(cluster.bootstrap_servers, topic)}
    expected = {key for key, value in log.items() if value in wanted}
    missing_in_log = wanted - set(log.values())
    if missing_in_log:
        outcome.failures.append(f"{len(missing_in_log)} acknowledged messages are not in the log (a broker lost them)")
    seen = collections.Counter({(p, o): n for (t, p, o, v), n in rows.items() if t == topic and log.get((p, o)) == v})
    outcome.rows = sum(rows.values())
    outcome.expected = len(expected)
    outcome.lost = len(expected - set(seen))
    outcome.duplicated = sum(n - 1 for n in seen.values() if n > 1)
    outcome.strays = outcome.rows - sum(seen[k] for k in expected)
    for count, what in ((outcome.lost, "lost"), (outcome.duplicated, "duplicated"), (outcome.strays, "strays")):
        if count:
            outcome.failures.append(f"{count} rows {what}")


def spark_said(error: Any) -> str:
    """A query's failure in one line: the line naming our error (Spark wraps a Python source's
    exception in its own message and traceback), else Spark's first line."""
    lines = str(error).splitlines() or [""]
    ours = [ln for ln in lines if ln.startswith("zkconsumer.")]
    return f"failed: {(ours[-1] if ours else lines[0])[:240]}"


def finish_query(outcome: Outcome, query: Any) -> None:
    """Stop a running query, recording what Spark said; a query that died is a failure."""
    error = query.exception()
    if error is not None:
        outcome.said = spark_said(error)
        outcome.failures.append("the query failed")
    else:
        outcome.said = "active, no exception" if query.isActive else "ended, no exception"
    query.stop()


def rolling(spark: Any, cluster: LocalCluster, folder: Path) -> Outcome:
    """A rolling restart of every broker under a running query: produced before, while each broker is
    down and after it is back; the query must live through it and read every row once."""
    outcome, topic = Outcome("rolling"), "trouble-rolling"
    cluster.create_topic(topic, 4)
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 80, partitions=4)
    query = parquet_query(reader(spark, cluster, folder, topic, startingOffsets="earliest"), folder)
    try:
        wait_until(lambda: source_end(query) == log_ends(cluster, topic), 120, "the first rows", query)
        for broker in cluster.brokers:
            broker.stop()  # an operator's rolling restart: one broker at a time, controlled shutdown
            sent += kafka.produce_numbered(cluster.bootstrap_servers, topic, 200, partitions=4, start=len(sent))
            time.sleep(5)  # triggers plan while the broker is away and its partitions have new leaders
            if query.exception() is not None:
                raise ScenarioFailed(f"the query died with broker {broker.broker_id} down")
            cluster.restart_broker(broker.broker_id)
            sent += kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=4, start=len(sent))
        want = log_ends(cluster, topic)
        wait_until(lambda: source_end(query) == want, 240, "every row read", query)
    except ScenarioFailed as exc:
        outcome.failures.append(str(exc))
    finally:
        finish_query(outcome, query)
    check_sink(outcome, cluster, topic, folder, {m.value for m in sent})
    return outcome


def timestamp(spark: Any, cluster: LocalCluster, folder: Path) -> Outcome:
    """startingTimestamp, partition 0's leader killed as the member joins: the first look-ups meet an election
    (the controller elects anew once the dead broker's ZooKeeper session expires). Rows stamped before
    the time must not be read, every later one once."""
    outcome, topic = Outcome("timestamp"), "trouble-timestamp"
    cluster.create_topic(topic, 3)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=3)
    time.sleep(1.0)
    since_ms = int(time.time() * 1000)
    time.sleep(0.5)
    after = kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=3, start=60)
    df = reader(spark, cluster, folder, topic, startingTimestamp=since_ms)
    query = parquet_query(df, folder)
    zk = cluster.zk_client()
    try:
        # Killed as the query's member joins: its claim and the timestamp look-ups that follow meet
        # the partition without a live leader until the controller elects one (the dead broker's
        # ZooKeeper session, 6 s, must expire first).
        wait_until(
            lambda: zk.exists(znodes.ids_path(topic)) and zk.get_children(znodes.ids_path(topic)),
            180,
            "the query's member to join",
            query,
        )
        killed = cluster.kill_partition_leader(topic, 0)
        outcome.notes.append(f"broker {killed} (leader of partition 0) killed as the query's member joined")
        after += kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=3, start=120)
        time.sleep(12)
        cluster.restart_broker(killed)
        after += kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=3, start=180)
        want = log_ends(cluster, topic)
        wait_until(lambda: source_end(query) == want, 240, "every row read", query)
    except ScenarioFailed as exc:
        outcome.failures.append(str(exc))
    finally:
        zk.stop()
        zk.close()
        finish_query(outcome, query)
        for broker in cluster.brokers:
            if not broker.process.running:
                cluster.restart_broker(broker.broker_id)
    check_sink(outcome, cluster, topic, folder, {m.value for m in after})
    return outcome


def produce_to(address: str, topic: str, partition: int, numbers: range) -> set[bytes]:
    """Messages `<topic>-<i>` for i in numbers into one partition through one broker; the acked values."""
    from confluent_kafka import Producer

    acked: set[bytes] = set()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked.add(message.value())

    producer = Producer({"bootstrap.servers": address, "acks": "all", **kafka.client_settings(address)})
    for i in numbers:
        producer.produce(topic, f"{topic}-{i}".encode(), partition=partition, on_delivery=delivered)
    if producer.flush(60):
        raise ScenarioFailed(f"messages to {topic}-{partition} were not delivered")
    return acked


def offline(spark: Any, cluster: LocalCluster, folder: Path, down_seconds: float) -> Outcome:
    """Partition 0 lives only on one broker, partition 1 only on another; the first is down for
    `down_seconds`: no replica to elect, so partition 0 has no leader at all. Partition 1 must be read
    meanwhile, the query must live (the bound, unreadablePartitionTimeoutMs, is 5 minutes), and
    partition 0 must be read once its broker is back."""
    outcome, topic = Outcome("offline"), "trouble-offline"
    down, up = cluster.brokers[0], cluster.brokers[1]
    zk = cluster.zk_client()
    try:
        kafka.write_topic(zk, topic, 2, [down.broker_id, up.broker_id], replication_factor=1)
    finally:
        zk.stop()
        zk.close()
    kafka.wait_for_leaders(cluster.bootstrap_servers, topic, 2, 60)
    sent = {m.value for m in kafka.produce_numbered(cluster.bootstrap_servers, topic, 40, partitions=2)}
    df = reader(spark, cluster, folder, topic, startingOffsets="earliest", **{"fetchOffset.retryIntervalMs": 200})
    query = parquet_query(df, folder)
    try:
        wait_until(lambda: source_end(query) == log_ends(cluster, topic), 120, "the first rows", query)
        down.stop()
        began = time.monotonic()
        sent |= produce_to(up.address, topic, 1, range(40, 70))
        wanted_p1 = 50  # 20 before, 30 while partition 0 is offline
        wait_until(lambda: source_end(query).get(1) == wanted_p1, 90, "partition 1 read meanwhile", query)
        outcome.notes.append(f"partition 1 read to its end {time.monotonic() - began:.0f} s into the outage")
        while time.monotonic() - began < down_seconds:
            if query.exception() is not None:
                raise ScenarioFailed(f"the query failed with partition 0 offline: {query.exception()}")
            time.sleep(1)
        outcome.notes.append(f"partition 0 offline for {time.monotonic() - began:.0f} s")
        cluster.restart_broker(down.broker_id)
        kafka.wait_for_leaders(cluster.bootstrap_servers, topic, 2, 60)
        sent |= {m.value for m in kafka.produce_numbered(cluster.bootstrap_servers, topic, 40, partitions=2, start=70)}
        want = log_ends(cluster, topic)
        wait_until(lambda: source_end(query) == want, 180, "every row read once the broker is back", query)
    except ScenarioFailed as exc:
        outcome.failures.append(str(exc))
    finally:
        finish_query(outcome, query)
        if not down.process.running:
            cluster.restart_broker(down.broker_id)
    check_sink(outcome, cluster, topic, folder, sent)
    return outcome


def crashed_run_nodes(cluster: LocalCluster, group: str, topic: str) -> Any:
    """A crashed run's member and owner nodes, alive until the returned session ends (as a killed
    driver's live until its session expires). Its id sorts first, so range assignment keeps the
    partition with it."""
    ghost = cluster.zk_client()
    dead = f"{group}_0000dead-1-00000000"
    registration = encode_registration(StaticSubscription.of({topic: 1}), int(time.time() * 1000))
    ghost.create(znodes.member_path(group, dead), registration, ephemeral=True, makepath=True)
    ghost.create(f"{znodes.owners_path(group, topic)}/0", f"{dead}-0".encode(), ephemeral=True, makepath=True)
    return ghost


def available_now(spark: Any, cluster: LocalCluster, folder: Path, *, hold: float, stuck: bool = False) -> Outcome:
    """An AvailableNow run beside a crashed run's live nodes, released `hold` s after the run's member
    joined: the run must then read every row once and succeed. `stuck`: `hold` is past the run's wait
    bound, so it must fail by name while the nodes live, with nothing in the sink."""
    name = "available-stuck" if stuck else "available"
    outcome, topic = Outcome(name), f"trouble-{name}"
    cluster.create_topic(topic, 1)
    sent = {m.value for m in kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=1)}
    ghost = crashed_run_nodes(cluster, topic, topic)
    query = None
    try:
        query = parquet_query(
            reader(spark, cluster, folder, topic, startingOffsets="earliest"), folder, available_now=True
        )
        ids = znodes.ids_path(topic)
        wait_until(lambda: len(ghost.get_children(ids)) == 2, 180, "the run's member to join beside the dead one")
        joined = time.monotonic()
        while time.monotonic() - joined < hold and query.isActive:
            time.sleep(0.5)
        waited = time.monotonic() - joined
        if not query.isActive:
            outcome.notes.append(f"the run ended {waited:.0f} s after joining, the nodes alive")
        else:
            outcome.notes.append(f"the run waited {waited:.0f} s beside the live nodes")
            if stuck:
                outcome.failures.append(f"the run still waited after {waited:.0f} s, past its bound")
    except ScenarioFailed as exc:
        outcome.failures.append(str(exc))
    finally:
        ghost.stop()  # the session ends: its nodes go, as at the expiry of a crashed run's session
        ghost.close()
    if query is None:
        return outcome
    try:
        ended = query.awaitTermination(180)
    except Exception:  # noqa: BLE001 - PySpark raises the query's own failure here; exception() says it
        ended = True
    error = query.exception()
    outcome.said = spark_said(error) if error is not None else ("succeeded" if ended else "still running")
    if not ended:
        outcome.failures.append("the run did not end")
        query.stop()
    check_sink(outcome, cluster, topic, folder, set() if stuck else sent)
    if stuck:
        outcome.expected = 0
        if error is None:
            outcome.silent_success = ended
            outcome.failures.append("the run did not fail by name")
        elif "AvailableNowIncomplete" not in str(error) and f"{topic}-0" not in str(error):
            outcome.failures.append("the failure does not name the partition")
    elif error is not None:
        outcome.failures.append("the run failed")
    elif outcome.lost:
        outcome.silent_success = True
    return outcome


def run(name: str, spark: Any, cluster: LocalCluster, workdir: Path, args: argparse.Namespace) -> Outcome:
    folder = workdir / name
    folder.mkdir()
    began = time.monotonic()
    load = os.getloadavg()[0]
    print(f"{name}: started (load average {load:.2f})", flush=True)
    if name == "rolling":
        outcome = rolling(spark, cluster, folder)
    elif name == "timestamp":
        outcome = timestamp(spark, cluster, folder)
    elif name == "offline":
        outcome = offline(spark, cluster, folder, args.down_seconds)
    else:
        stuck = name == "available-stuck"
        outcome = available_now(spark, cluster, folder, hold=args.stuck_wait if stuck else args.hold, stuck=stuck)
    outcome.seconds = time.monotonic() - began
    outcome.notes.append(f"load {load:.2f}")
    verdict = "FAILED: " + "; ".join(outcome.failures) if outcome.failures else "ok"
    print(
        f"{name}: {verdict} | Spark: {outcome.said} | rows {outcome.rows} of {outcome.expected} expected, "
        f"lost {outcome.lost}, duplicated {outcome.duplicated}, strays {outcome.strays}, silent success "
        f"{'yes' if outcome.silent_success else 'no'} | {outcome.seconds:.0f} s | {'; '.join(outcome.notes)}",
        flush=True,
    )
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", help="an existing Spark master, or local[2] (default: a standalone cluster)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--down-seconds", type=float, default=60.0, help="offline: how long the broker is down")
    parser.add_argument("--hold", type=float, default=20.0, help="available: seconds the crashed run's nodes live")
    parser.add_argument(
        "--stuck-wait", type=float, default=150.0, help="available-stuck: longest wait for the run to fail"
    )
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import spark_ingest  # the benchmark's Spark session: the wheel shipped and checked on a cluster
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(spark_ingest)  # its executor check runs functions of it there
    from harness.spark_cluster import SparkStandalone, build_wheel

    workdir = Path(tempfile.mkdtemp(prefix="spark-trouble-"))
    cluster = standalone = spark = None
    label = "?"
    outcomes: list[Outcome] = []
    loads: list[float] = []
    try:
        cluster = LocalCluster(brokers=3, chroot="/trouble", replication_factor=3, workdir=workdir / "kafka")
        cluster.start()
        master, wheel = args.master, None
        if master is None or not master.startswith("local"):
            wheel = build_wheel(workdir / "wheel", ROOT)
            os.environ["PYTHONPATH"] = str(wheel)
        if master is None:
            standalone = SparkStandalone(workdir / "standalone", workers=2, cores=1, memory="1g").start()
            master = standalone.url
        spark = spark_ingest.spark_session(master, [], "1g", "1g", wheel, None)
        label = spark_ingest.master_label(master)
        print(f"master {master} ({label}), {spark.sparkContext.defaultParallelism} cores", flush=True)
        for name in names:
            loads.append(os.getloadavg()[0])
            outcomes.append(run(name, spark, cluster, workdir, args))
    finally:
        if spark is not None:
            spark.stop()
        if standalone is not None:
            standalone.stop()
        if cluster is not None:
            cluster.stop()
    failed = [o for o in outcomes if o.failures]
    print("| scenario | Spark reported | rows written | expected | lost | duplicated | silent success | s |")
    print("|---|---|---|---|---|---|---|---|")
    for o in outcomes:
        print(
            f"| {o.name} | {o.said} | {o.rows} | {o.expected} | {o.lost} | {o.duplicated} | "
            f"{'yes' if o.silent_success else 'no'} | {o.seconds:.0f} |"
        )
    if failed:
        print(f"kept {workdir} (logs, sinks)", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"scenarios={len(outcomes)} failed={len(failed)} lost={sum(o.lost for o in outcomes)} "
        f"duplicated={sum(o.duplicated for o in outcomes)} silent_success={sum(o.silent_success for o in outcomes)} "
        f"master={label} loadavg={statistics.median(loads) if loads else 0:.2f}"
    )
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
