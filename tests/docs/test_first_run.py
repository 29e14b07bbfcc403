"""What getting-started.md says a first `up` prints while Maven fetches the jars (jars.fetch_jars; no JVM).

A small `mvn` script stands in for Maven here, on the PATH of the fetch only: it writes a jar where it is
told to and grows the Maven repository named by MAVEN_OPTS, slowly enough for progress lines. The real
fetch runs in the cluster tiers (scripts/fetch-jars.sh, LocalCluster).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zkconsumer.testing import jars

FAKE_MVN = """#!/usr/bin/env bash
# args: -B -q -f POM PLUGIN:copy-dependencies -DoutputDirectory=DIR -DincludeScope=runtime
for arg in "$@"; do case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac; done
repo="${MAVEN_OPTS#*-Dmaven.repo.local=}"
mkdir -p "$out" "$repo"
for i in 1 2 3; do head -c 2000000 /dev/zero > "$repo/part$i.jar"; sleep 0.25; done
[ -n "${FAIL:-}" ] && { echo "[ERROR] Could not resolve dependencies"; exit 1; }
head -c 1000000 /dev/zero > "$out/kafka_2.13-3.9.1.jar"
"""


@pytest.fixture
def fake_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text(FAKE_MVN)
    (bin_dir / "mvn").chmod(0o755)
    repository = tmp_path / "m2"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MAVEN_OPTS", f"-Dmaven.repo.local={repository}")
    monkeypatch.setattr(jars, "HEARTBEAT_S", 0.2)
    return repository


def test_a_fetch_says_where_it_writes_how_much_and_that_it_still_runs(tmp_path: Path, fake_maven: Path) -> None:
    lines: list[str] = []
    target = jars.fetch_jars("kafka39", tmp_path / "jars" / "kafka39", report=lines.append)
    assert target == tmp_path / "jars" / "kafka39" and (target / "kafka_2.13-3.9.1.jar").is_file()
    first, *still, last = lines
    assert f"into {target}" in first
    assert f"Maven keeps its own copy in {fake_maven}" in first and "about 75 MB" in first
    assert still and all(line.startswith("still fetching kafka39 jars (") for line in still)
    assert still[-1].endswith("MB so far)") and " 0 MB so far" not in still[-1]
    assert last.startswith("fetched 1 jars (1 MB) in ") and last.endswith(f"{fake_maven} grew by 6 MB")


def test_a_failed_fetch_names_maven_s_error_and_leaves_no_half_folder(
    tmp_path: Path, fake_maven: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL", "1")
    target = tmp_path / "jars" / "kafka39"
    with pytest.raises(
        jars.JarsMissingError, match=r"(?s)mvn failed to fetch kafka39 jars \(exit 1\).*Could not resolve"
    ):
        jars.fetch_jars("kafka39", target, report=lambda line: None)
    assert not target.exists()


def test_an_install_without_a_set_s_pom_says_it_only_carries_the_default_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel_like = tmp_path / "poms"
    (wheel_like / "kafka39").mkdir(parents=True)
    (wheel_like / "kafka39" / "pom.xml").write_text("<project/>")
    monkeypatch.setattr(jars, "POMS", wheel_like)
    monkeypatch.setenv("ZKCONSUMER_JARS", str(tmp_path / "jars"))
    assert jars.pom_of("kafka39") == wheel_like / "kafka39" / "pom.xml"
    with pytest.raises(jars.JarsMissingError) as refused:
        jars.jar_dir("kafka241")
    assert "carries the pom of the default cluster (kafka39) only" in str(refused.value)
    assert "Run from a checkout, or set ZKCONSUMER_JARS" in str(refused.value)


def test_a_checkout_has_every_set_s_pom() -> None:
    assert jars.repo_root() is not None, "this test runs from a checkout"
    assert all(jars.pom_of(name).is_file() for name in jars.KNOWN)
