"""Run the connector, interop, CLI, Burrow and Spark smoke tests on every Kafka/ZooKeeper pairing the harness knows.

    .venv/bin/python scripts/matrix.py                       # every pairing, the default tests
    .venv/bin/python scripts/matrix.py --pairings 0.9.0.1/3.4.14,0.8.2.2/3.4.14   # the pre-0.10 brokers' own set
    .venv/bin/python scripts/matrix.py --pairings 1.1.1/3.4.14,0.10.2.2/3.4.14 --tests tests/cluster/test_connector.py

Each pairing is one pytest run with ZKCONSUMER_KAFKA_VERSION / ZKCONSUMER_ZOOKEEPER_VERSION set,
so the session's local cluster runs that broker release on that ZooKeeper server (jars fetched
with Maven the first time). Prints a table (pairing, passed, failed, seconds) and, last, the
machine-readable line `pairings=N passed=N failed=N`; exits 1 if any test failed or errored.

`--jobs N` runs up to N pairings at once (scripts/test.sh runs its two old pairings side by side).
Each run has its own cluster, KDC and Burrow on free ports and its own pytest temp folder, so they
share nothing but the jar folder: the jar sets every pairing needs are fetched first, one at a time.
A pairing's pytest output is then kept in a file and printed whole when it ends (not interleaved).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = (
    "tests/cluster/test_connector.py",
    "tests/cluster/test_cli.py",
    "tests/cluster/test_burrow.py",
    "tests/interop",
    "tests/spark/test_spark_bench_smoke.py",
)
_SCALA_RELEASE_TESTS = (
    "test_a_range_group_hands_partitions_both_ways_and_the_releases_tools_read_it",
    "test_a_roundrobin_group_agrees_with_each_release_on_the_order",
    "test_a_whitelist_group_writes_the_releases_bytes_and_outlives_its_killed_scala_member",
)


def _own_release_tests(release: str) -> tuple[str, ...]:
    """The connector and CLI tests, and the mixed groups of that release's own Scala members."""
    return (
        "tests/cluster/test_connector.py",
        "tests/cluster/test_cli.py",
        *(f"tests/interop/test_scala_releases.py::{name}[{release}]" for name in _SCALA_RELEASE_TESTS),
    )


# Brokers before 0.10 run their own set: the connector and CLI tests and the mixed groups of Scala
# members of the broker's own release. The rest of the default set (the 1.1.1 interop suite, Burrow,
# Spark) was not tried on them. docs/differences.md ("Brokers 0.8.2.2 and 0.9.0.1") says what differs.
OLD_PAIRINGS = {
    "0.8.2.2/3.4.14": _own_release_tests("0.8.2.2"),
    "0.9.0.1/3.4.14": _own_release_tests("0.9.0.1"),
}
PAIRINGS = (
    "0.10.2.2/3.4.14",
    "0.11.0.3/3.4.14",
    "1.1.1/3.4.14",
    "1.1.1/3.5.10",
    "2.4.1/3.5.10",
    "2.8.2/3.5.10",
    "3.9.1/bundled",
    *OLD_PAIRINGS,
)


def header(pairing: str) -> str:
    return f"=== Kafka {pairing.replace('/', ' on ZooKeeper ')}"


def fetch_jars(pairings: list[str]) -> None:
    """Fetch (once, one set at a time) the jar sets of every pairing and of the Scala members, so that
    pairings run side by side never start Maven on the same folder."""
    sys.path.insert(0, str(ROOT))
    from zkconsumer.testing.jars import jar_dir
    from zkconsumer.testing.versions import kafka_release, zookeeper_release

    sets = ["kafka11"]  # the Scala 1.1.1 members of the interop tests
    for pairing in pairings:
        kafka, _, zookeeper = pairing.partition("/")
        release = kafka_release(kafka)
        server = zookeeper_release(None if zookeeper in ("", "bundled") else zookeeper, release)
        sets += [release.jar_set, *([server.jar_set] if server.jar_set else [])]
    for name in dict.fromkeys(sets):
        try:
            jar_dir(name)
        except Exception as exc:  # the pairing's tests then fail on it, with the reason
            print(f"matrix.py: could not fetch the {name} jars: {exc}", flush=True)


def run_pairing(pairing: str, tests: list[str], extra: list[str], log: Path | None = None) -> tuple[int, int, float]:
    """(passed, failed or errored, seconds) of one pytest run against `pairing` (kafka/zookeeper);
    its output goes to `log` when given (else to this process's stdout/stderr)."""
    kafka, _, zookeeper = pairing.partition("/")
    env = {
        **os.environ,
        "ZKCONSUMER_KAFKA_VERSION": kafka,
        "ZKCONSUMER_ZOOKEEPER_VERSION": "" if zookeeper in ("", "bundled") else zookeeper,
    }
    with tempfile.TemporaryDirectory(prefix="zkconsumer-matrix-") as folder:
        report = Path(folder) / "report.xml"
        began = time.monotonic()
        with open(log, "wb") if log else contextlib.nullcontext() as out:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--junitxml={report}",
                    *tests,
                    *extra,
                ],
                cwd=ROOT,
                env=env,
                **({"stdout": out, "stderr": subprocess.STDOUT} if log else {}),
            )
        seconds = time.monotonic() - began
        if not report.exists():  # pytest could not even collect: count the run as one failure
            return 0, 1, seconds
        suite = ET.parse(report).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")  # type: ignore[assignment]
        total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
    if done.returncode not in (0, 1):  # interrupted, usage error, internal error
        failed = max(failed, 1)
    return max(0, total - failed - skipped), failed, seconds  # a collection error counts no test


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--pairings", default=",".join(PAIRINGS), help="kafka/zookeeper,... (zookeeper 'bundled': the release's own)"
    )
    parser.add_argument(
        "--tests",
        default="",
        help="pytest paths, comma-separated (default: the default set, or an old broker's own: OLD_PAIRINGS)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="pairings run at once (default 1: one after another)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    pairings = [p.strip() for p in args.pairings.split(",") if p.strip()]
    given = [t.strip() for t in args.tests.split(",") if t.strip()]

    def tests_of(pairing: str) -> list[str]:
        return given or list(OLD_PAIRINGS.get(pairing, TESTS))

    rows = []
    if args.jobs <= 1:
        for pairing in pairings:
            print(header(pairing), flush=True)
            rows.append((pairing, *run_pairing(pairing, tests_of(pairing), args.pytest_args)))
    else:
        fetch_jars(pairings)
        with tempfile.TemporaryDirectory(prefix="zkconsumer-matrix-logs-") as folder:
            logs = [Path(folder) / f"{i}.log" for i in range(len(pairings))]
            print(f"=== {len(pairings)} pairings, {args.jobs} at a time: {', '.join(pairings)}", flush=True)
            with ThreadPoolExecutor(args.jobs) as pool:
                results = list(
                    pool.map(
                        lambda i: run_pairing(pairings[i], tests_of(pairings[i]), args.pytest_args, logs[i]),
                        range(len(pairings)),
                    )
                )
            for pairing, log, result in zip(pairings, logs, results):
                print(header(pairing), flush=True)
                sys.stdout.write(log.read_text(errors="replace"))
                sys.stdout.flush()
                rows.append((pairing, *result))
    print(f"\n{'pairing':<20} {'passed':>7} {'failed':>7} {'seconds':>8}")
    for pairing, passed, failed, seconds in rows:
        print(f"{pairing:<20} {passed:>7} {failed:>7} {seconds:>8.0f}")
    total_passed, total_failed = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"pairings={len(rows)} passed={total_passed} failed={total_failed}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
