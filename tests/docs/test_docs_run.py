"""README.md, docs/getting-started.md and docs/cli.md run as written: every shell and Python block, in order.

README's and cli.md's blocks run in this checkout's environment against the session's `cluster`
(tests/conftest.py), their example addresses replaced by the cluster's; cli.md's first blocks make
what its session shows (a topic, a group of three members running in the background).
getting-started.md is followed from its install section on, in a copy of the checkout: a fresh
virtualenv gets `pip install .`, then (zkconsumer uninstalled again, as the page offers one or the
other) the wheel the next block builds; the rest runs in another folder on that wheel: `python -m
zkconsumer.testing up` starts the page's own cluster (on this checkout's fetched jars,
ZKCONSUMER_JARS) and the later blocks use the addresses `up` printed. Blocks marked docs-run
skip/same-as are listed in the closing summary (tests/docs/conftest.py), never run; a docs-run
file block is saved where the blocks run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from docs_blocks import ROOT, Block, blocks
from docs_runner import Runner

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# What README's Quick start leaves to the reader: handle(), here counting messages, and an end (the
# stream has none): the third message raises DocsDone, which leaves the `with` block (committing) and
# ends the script as a success.
HANDLE_PRELUDE = """\
class DocsDone(Exception):
    pass

_handled = []

def handle(topic, partition, offset, key, value):
    _handled.append((topic, partition, offset))
    print("handled", topic, partition, offset, value)
    if len(_handled) == 3:
        raise DocsDone(f"handled {_handled}")
"""
PRELUDES = {"handle(": HANDLE_PRELUDE}  # a Python block holding the key gets the prelude


def _run_page(
    runner: Runner,
    page: str,
    cwd_of: dict[str, Path] | None = None,
    before: Callable[[Block], None] = lambda block: None,
) -> None:
    """Run every block of `page` that runs, in order, each Python block with its output block if any;
    `cwd_of` maps a section's title to the folder its blocks run in ("*": the others)."""
    found = blocks(page)
    sections = _sections(page)
    for index, block in enumerate(found):
        if not block.runs and block.marker != "file":
            continue
        before(block)
        if cwd_of:
            runner.cwd = cwd_of.get(_section_of(block, sections), cwd_of["*"])
        if block.marker == "file":
            runner.write_file(block)
            continue
        if block.kind == "shell":
            runner.run_shell(block)
            continue
        following = found[index + 1] if index + 1 < len(found) else None
        expected = following if following is not None and following.marker == "output" else None
        preludes = [text for key, text in PRELUDES.items() if key in block.text]
        runner.run_python(block, prelude="".join(preludes), expected=expected)


def _sections(page: str) -> list[tuple[int, str]]:
    lines = (ROOT / page).read_text().splitlines()
    return [(number, line[3:].strip()) for number, line in enumerate(lines, start=1) if line.startswith("## ")]


def _section_of(block: Block, sections: list[tuple[int, str]]) -> str:
    return max(((line, title) for line, title in sections if line < block.line), default=(0, ""))[1]


@pytest.fixture
def orders_flowing(cluster, topic_factory) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """README's topic `orders` (2 partitions), a message every 50 ms while the test runs: the Quick
    start's member starts at the log end (auto.offset.reset=largest), so it needs new messages."""
    topic = topic_factory(partitions=2, name="orders")
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})

    def produce() -> None:
        n = 0
        while not stop.wait(0.05):
            producer.produce(topic, value=f"order-{n}".encode(), partition=n % 2)
            producer.poll(0)
            n += 1

    thread = threading.Thread(target=produce, name="orders-producer", daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()
    producer.flush(10)


def test_readme_runs_as_written(cluster, orders_flowing, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    examples = {"zk1:2181,zk2:2181/kafka": cluster.zookeeper_connect, "zk1:2181/kafka": cluster.zookeeper_connect}
    readme = (ROOT / "README.md").read_text()
    assert all(example in readme for example in examples), "README's example addresses changed: update this table"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    runner = Runner(python=Path(sys.executable), env=env, cwd=tmp_path, substitutions=examples)
    _run_page(runner, "README.md")
    assert any("README.md" in ran for ran in runner.ran)


# docs/cli.md's example addresses: `up`'s zookeeper.connect (also in ZKCONSUMER_ZOOKEEPER) and bootstrap.servers.
CLI_ZOOKEEPER, CLI_BOOTSTRAP = "127.0.0.1:55349/kafka", "127.0.0.1:55352"


def test_cli_page_runs_as_written(cluster, zk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """docs/cli.md's session in order on the session's cluster: its own setup blocks make the topic
    `payments` and the members of `billing` (processes in the background, stopped by the page; any
    still running when a block fails are stopped here), and every command's output is checked."""
    page = "docs/cli.md"
    examples = {CLI_ZOOKEEPER: cluster.zookeeper_connect, CLI_BOOTSTRAP: cluster.bootstrap_servers}
    text = (ROOT / page).read_text()
    assert all(example in text for example in examples), f"{page}'s example addresses changed: update CLI_*"
    for group in ("billing", "peek"):  # README's Quick start, run before on this cluster, left a group billing
        if zk.exists(f"/consumers/{group}"):
            zk.delete(f"/consumers/{group}", recursive=True)
    assert not zk.exists("/brokers/topics/payments"), "the page creates the topic payments: it must not exist yet"
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        ZKCONSUMER_ZOOKEEPER=cluster.zookeeper_connect,  # the page's `export ZKCONSUMER_ZOOKEEPER=...`
    )
    runner = Runner(python=Path(sys.executable), env=env, cwd=tmp_path, substitutions=examples, timeout=60)
    try:
        _run_page(runner, page)
    finally:
        _stop_members(tmp_path)
    ran = "\n".join(runner.ran)
    for step in ("saved as billing_member.py", "zkconsumer groups describe", "zkconsumer migrate plan"):
        assert step in ran, f"{step!r} did not run:\n{ran}"


def _stop_members(folder: Path) -> None:
    """Stop the page's members (pids in <name>.pid) still running, e.g. after a failed block: SIGTERM,
    then SIGKILL after 10 s; print their logs (shown when the test fails)."""

    def member(pid: int) -> bool:  # ours, alive: not a pid reused since, nor a zombie (no cmdline)
        try:
            return b"billing_member.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    def signal_all(pids: list[int], signum: int) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    running = [pid for pid in (int(f.read_text().split()[0]) for f in sorted(folder.glob("*.pid"))) if member(pid)]
    signal_all(running, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while running and time.monotonic() < deadline:
        time.sleep(0.2)
        running = [pid for pid in running if member(pid)]
    signal_all(running, signal.SIGKILL)
    for log in sorted(folder.glob("*.log")):
        print(f"--- {log.name}\n{log.read_text()}")


def _copy_checkout(target: Path) -> Path:
    """The checkout's files as they are now (tracked and new, not ignored: no .venv, .jars, build/)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted but not yet committed is listed and absent
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_getting_started_runs_as_written_from_a_fresh_virtualenv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    checkout = _copy_checkout(tmp_path / "checkout")
    elsewhere = tmp_path / "elsewhere"  # "the rest of this page works in any folder"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ZKCONSUMER_CLUSTER_DIR")}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
        VIRTUAL_ENV=str(venv),
        PYTHONNOUSERSITE="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        ZKCONSUMER_JARS=os.environ.get("ZKCONSUMER_JARS", str(ROOT / ".jars")),
    )
    runner = Runner(python=venv / "bin" / "python", env=env, cwd=checkout, timeout=240)

    def choose_the_wheel(block: Block) -> None:
        """The page offers `pip install .` or a wheel: the wheel block installs into a venv without the former."""
        if any(line.startswith("pip install dist/") for line in block.command_lines()):
            subprocess.run([str(venv / "bin" / "pip"), "uninstall", "-q", "-y", "zkconsumer"], env=env, check=True)

    try:
        _run_page(
            runner, "docs/getting-started.md", cwd_of={"Install": checkout, "*": elsewhere}, before=choose_the_wheel
        )
    finally:
        if (elsewhere / ".zkconsumer-cluster" / "state.json").exists():
            subprocess.run([str(venv / "bin" / "python"), "-m", "zkconsumer.testing", "down"], cwd=elsewhere, env=env)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import zkconsumer; print(zkconsumer.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert installed.startswith(str(venv)), f"the page's snippets ran on {installed}, not on the installed package"
    _check_the_wheel(checkout / "dist" / "zkconsumer-0.1.0-py3-none-any.whl")
    refused = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from zkconsumer.testing.jars import jar_dir; jar_dir('kafka241')"],
        cwd=elsewhere,
        env=dict(env, ZKCONSUMER_JARS=str(tmp_path / "no-jars")),
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "carries the pom of the default cluster (kafka39) only" in refused.stderr
    ran = "\n".join(runner.ran)
    for step in ("pip install .", "python -m build --wheel", "python -m zkconsumer.testing up", "zkconsumer groups"):
        assert step in ran, f"{step!r} did not run:\n{ran}"


def _check_the_wheel(wheel: Path) -> None:
    """The wheel the page built: the default cluster's pom only, no pytest11 plugin, javaproperties required."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read("zkconsumer-0.1.0.dist-info/entry_points.txt").decode()
        metadata = archive.read("zkconsumer-0.1.0.dist-info/METADATA").decode()
    assert [name for name in names if name.endswith("pom.xml")] == ["zkconsumer/testing/poms/kafka39/pom.xml"]
    assert "pytest11" not in entry_points and "zkconsumer = zkconsumer.cli.main:main" in entry_points
    assert "Requires-Dist: javaproperties" in metadata
