"""docs/admin.md's Python examples run as written against a real group: the read prints the group's true partitions, offsets and owners, the owner-fenced write writes 75 or refuses naming the owner."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from docs_blocks import ROOT, Block, blocks
from docs_runner import Runner

from harness.members import FAST, committed_offsets, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]

PAGE = "docs/admin.md"
# The page's example values: its ZooKeeper address, and the group and topic of the guarded write.
ZOOKEEPER, GROUP, TOPIC = "localhost:2181", '"billing"', '"orders"'


def the_block(found: list[Block], call: str) -> Block:
    """The one Python block of the page that calls `call`."""
    matching = [block for block in found if block.kind == "python" and f"{call}(" in block.text]
    assert len(matching) == 1, f"{PAGE}: {len(matching)} Python blocks call {call}: update this test"
    return matching[0]


def section(output: str, group: str) -> list[str]:
    """The lines the read example printed about `group`: its header line and the indented ones after it."""
    lines = output.splitlines()
    start = lines.index(f"{group} 1 members")
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def test_the_admin_page_examples_run_against_a_real_group(  # type: ignore[no-untyped-def]
    cluster, zk, topic_factory, produce, group_id: str, tmp_path: Path
) -> None:
    found = blocks(PAGE)
    assert all(block.runs for block in found if block.kind == "python"), "every Python block of the page runs"
    assert not [b.where for b in found if b.kind == "shell"], f"{PAGE} has shell blocks now: run them here too"
    text = (ROOT / PAGE).read_text()
    assert all(example in text for example in (ZOOKEEPER, GROUP, TOPIC)), f"{PAGE}'s example values changed"
    topic = topic_factory(partitions=2)
    runner = Runner(
        python=Path(sys.executable),
        env=dict(os.environ),
        cwd=tmp_path,
        substitutions={ZOOKEEPER: cluster.zookeeper_connect, GROUP: f'"{group_id}"', TOPIC: f'"{topic}"'},
        timeout=60,
    )
    read, write = the_block(found, "take_snapshot"), the_block(found, "write_offset")
    produce(topic, 200, partitions=2)  # 100 per partition: 75 lies in the log
    zk.create(znodes.offset_path(group_id, topic, 1), b"7", makepath=True)

    # No owner: the guarded write writes 75 to partition 0 and leaves partition 1 alone.
    assert runner.run_python(write) == "written\n"
    assert committed_offsets(zk, group_id, topic) == {0: 75, 1: 7}

    settings = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "m", **FAST}
    with ConsumerConnector({**settings, "auto.commit.enable": False}) as conn:
        conn.create_message_streams({topic: 1})
        wait_for_balanced(zk, group_id, [topic], members=1)
        owner = f"{group_id}_m-0"

        # The read: the group, its one member, each partition's offset and owner, no problem.
        printed = runner.run_python(read)
        assert section(printed, group_id) == [
            f"{group_id} 1 members",
            f"  {topic} 0 75 {owner}",
            f"  {topic} 1 7 {owner}",
        ], printed

        # An owner: the write refuses, naming it and its session, and writes nothing.
        before = zk.exists(znodes.offset_path(group_id, topic, 0))
        session = zk.exists(znodes.owner_path(group_id, topic, 0)).ephemeralOwner
        refused = runner.run_python(write)
        assert refused == (
            f"not written: owned by {owner} (session 0x{session:x}); stop that member (or let its session "
            "expire) first\n"
        )
        assert zk.exists(znodes.offset_path(group_id, topic, 0)).version == before.version
    assert committed_offsets(zk, group_id, topic) == {0: 75, 1: 7}
    ran = [line for line in runner.ran if re.match(rf"{re.escape(PAGE)}:\d+ python ", line)]
    assert {line.split()[0] for line in ran} == {b.where for b in found if b.kind == "python"}, ran
    zk.delete(znodes.group_path(group_id), recursive=True)
