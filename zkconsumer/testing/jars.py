"""Locate (and on first use fetch with Maven) the jar folders the local cluster runs from."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# Each entry is a folder of jars built from poms/<name>/pom.xml (next to this file):
#   kafka39  the ZooKeeper-mode Kafka 3.9 broker, plus the ZooKeeper server it bundles
#   kafka11  the legacy Scala 1.1.1 client (never mixed with kafka39 on one classpath); also the 1.1.1 broker
# and, fetched only when LocalCluster first runs that version (versions.py maps versions to sets):
#   kafka0102 kafka0113 kafka241 kafka282  ZooKeeper-era brokers, each with the ZooKeeper it bundles
#   zk3414 zk3510                           standalone ZooKeeper servers
MATRIX = ("kafka0102", "kafka0113", "kafka241", "kafka282", "zk3414", "zk3510")
KNOWN = ("kafka39", "kafka11", "spark-kafka", *MATRIX)
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


class JarsMissingError(RuntimeError):
    """The jars are absent and could not be fetched; the message says what to run."""


POMS = Path(__file__).resolve().parent / "poms"  # shipped with the package: <name>/pom.xml


def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (its jars go to <checkout>/.jars)."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "scripts" / "fetch-jars.sh").is_file() else None


def jars_home() -> Path:
    """Where jar folders live: $ZKCONSUMER_JARS, else <checkout>/.jars, else ~/.cache/zkconsumer/jars."""
    env = os.environ.get("ZKCONSUMER_JARS")
    if env:
        return Path(env)
    root = repo_root()
    if root is not None:
        return root / ".jars"
    return Path.home() / ".cache" / "zkconsumer" / "jars"


def jar_dir(name: str, *, fetch: bool = True) -> Path:
    """Return the folder of jars called `name`, fetching it with mvn when missing and allowed."""
    if name not in KNOWN:
        raise ValueError(f"unknown jar set {name!r} (known: {', '.join(KNOWN)})")
    target = jars_home() / name
    if _complete(target):
        return target
    if not fetch:
        raise JarsMissingError(f"{target} has no jars; run scripts/fetch-jars.sh")
    return fetch_jars(name, target)


def classpath(name: str) -> str:
    """A java -cp value covering every jar of the set."""
    return str(jar_dir(name) / "*")


def fetch_jars(name: str, target: Path) -> Path:
    """Run `mvn dependency:copy-dependencies` for zkconsumer/testing/poms/<name>/pom.xml into target."""
    pom = POMS / name / "pom.xml"
    if not pom.is_file():
        raise JarsMissingError(
            f"no jars in {target} and no {pom} to fetch them with; set ZKCONSUMER_JARS to a folder holding them"
        )
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsMissingError("Maven (mvn) is not installed: apt-get install maven")
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        f"{MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={tmp}",
        "-DincludeScope=runtime",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise JarsMissingError(f"mvn failed to fetch {name} jars (exit {done.returncode}):\n{tail}")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # atomic: a half-fetched folder never looks complete
    return target


def _complete(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*.jar"))
