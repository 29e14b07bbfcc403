"""Locate (and on first use fetch with Maven) the jar folders the local cluster runs from."""

from __future__ import annotations

import logging
import os
import pwd
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from zkconsumer.errors import ZkConsumerError

# Each entry is a folder of jars built from poms/<name>/pom.xml (next to this file):
#   kafka39  the ZooKeeper-mode Kafka 3.9 broker, plus the ZooKeeper server it bundles
#   kafka11  the legacy Scala 1.1.1 client (never mixed with kafka39 on one classpath); also the 1.1.1 broker
# and, fetched only when LocalCluster first runs that version (versions.py maps versions to sets):
#   kafka0102 kafka0113 kafka241 kafka282  ZooKeeper-era brokers, each with the ZooKeeper it bundles
#   zk3414 zk3510                           standalone ZooKeeper servers
#   kafka0822 kafka0901 kafka102            the legacy Scala clients of 0.8.2.2, 0.9.0.1 and 1.0.2 (mixed groups);
#                                           the first two are the 0.8.2.2 and 0.9.0.1 brokers too
MATRIX = ("kafka0102", "kafka0113", "kafka241", "kafka282", "zk3414", "zk3510")
SCALA_CLIENTS = ("kafka0822", "kafka0901", "kafka102")
KNOWN = ("kafka39", "kafka11", "spark-kafka", *MATRIX, *SCALA_CLIENTS)
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
DEFAULT = "kafka39"  # the default cluster's set (versions.DEFAULT_KAFKA): the only pom a wheel carries
HEARTBEAT_S = 15.0  # how often a running fetch says it still runs
# What a first fetch of kafka39 adds to an empty Maven repository (the jars, their poms, the dependency
# plugin): 72 MB measured on 2026-11-27, then 46 MB copied into the jar folder.
FIRST_FETCH_MB = 75

log = logging.getLogger(__name__)
Report = Callable[[str], None]  # where fetch progress goes (python -m zkconsumer.testing: stderr)


class JarsMissingError(ZkConsumerError, RuntimeError):
    """The jars are absent and could not be fetched; the message says what to run."""


# <name>/pom.xml next to this file. A wheel carries poms/kafka39 only; the others are in the source checkout.
POMS = Path(__file__).resolve().parent / "poms"


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


def jar_dir(name: str, *, fetch: bool = True, report: Report | None = None) -> Path:
    """Return the folder of jars called `name`, fetching it with mvn when missing and allowed
    (progress lines go to `report`, else to this module's logger at INFO)."""
    if name not in KNOWN:
        raise ValueError(f"unknown jar set {name!r} (known: {', '.join(KNOWN)})")
    target = jars_home() / name
    if _complete(target):
        return target
    if not fetch:
        raise JarsMissingError(f"{target} has no jars; run scripts/fetch-jars.sh")
    return fetch_jars(name, target, report=report)


def classpath(name: str) -> str:
    """A java -cp value covering every jar of the set."""
    return str(jar_dir(name) / "*")


def pom_of(name: str) -> Path:
    """zkconsumer/testing/poms/<name>/pom.xml; JarsMissingError when this install has none (a wheel has kafka39's)."""
    pom = POMS / name / "pom.xml"
    if not pom.is_file():
        raise JarsMissingError(
            f"no {name} jars in {jars_home() / name}, and no pom to fetch them with: an installed zkconsumer carries "
            f"the pom of the default cluster ({DEFAULT}) only; the {name} set (test matrix, Scala client, Spark) is "
            f"fetched from a source checkout (scripts/fetch-jars.sh). Run from a checkout, or set ZKCONSUMER_JARS "
            f"to a folder holding {name}/"
        )
    return pom


def maven_repository() -> Path:
    """Where mvn keeps what it downloads: -Dmaven.repo.local in MAVEN_ARGS or MAVEN_OPTS, else
    <localRepository> of ~/.m2/settings.xml, else ~/.m2/repository.

    ~ is the account's home as Java sees it (user.home comes from the password database, not $HOME).
    """
    for variable in ("MAVEN_ARGS", "MAVEN_OPTS"):
        given = re.search(r"-Dmaven\.repo\.local=(\S+)", os.environ.get(variable, ""))
        if given:
            return Path(given.group(1))
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    settings = home / ".m2" / "settings.xml"
    if settings.is_file():
        found = re.search(r"<localRepository>\s*([^<]+?)\s*</localRepository>", settings.read_text(errors="replace"))
        if found:
            return Path(found.group(1).replace("${user.home}", str(home)))
    return home / ".m2" / "repository"


def folder_bytes(folder: Path) -> int:
    """The size of the files under `folder` (0 when it does not exist)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0


def fetch_jars(name: str, target: Path, *, report: Report | None = None) -> Path:
    """Run `mvn dependency:copy-dependencies` for zkconsumer/testing/poms/<name>/pom.xml into target,
    saying what it fetches, where to, and (every HEARTBEAT_S) that it still runs."""
    say: Report = report or log.info
    pom = pom_of(name)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsMissingError("Maven (mvn) is not installed: apt-get install maven")
    repository = maven_repository()
    before = folder_bytes(repository)
    say(
        f"fetching the {name} jars with Maven (first run only) into {target}; Maven keeps its own copy in "
        f"{repository} (about {FIRST_FETCH_MB} MB for {DEFAULT} when it is empty)"
    )
    started = time.monotonic()
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
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as mvn_run:
        output: list[str] = []
        while True:
            try:
                out, _ = mvn_run.communicate(timeout=HEARTBEAT_S)
                output.append(out or "")
                break
            except subprocess.TimeoutExpired:
                so_far = max(0, folder_bytes(repository) - before) / 1e6
                say(f"still fetching {name} jars ({time.monotonic() - started:.0f}s, {so_far:.0f} MB so far)")
    if mvn_run.returncode != 0:
        tail = "\n".join("".join(output).splitlines()[-30:])
        raise JarsMissingError(f"mvn failed to fetch {name} jars (exit {mvn_run.returncode}):\n{tail}")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # atomic: a half-fetched folder never looks complete
    grew = max(0, folder_bytes(repository) - before)
    say(
        f"fetched {sum(1 for _ in target.glob('*.jar'))} jars ({folder_bytes(target) / 1e6:.0f} MB) in "
        f"{time.monotonic() - started:.1f}s; {repository} grew by {grew / 1e6:.0f} MB"
    )
    return target


def _complete(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*.jar"))
