"""One ZooKeeper session factory: only zkconsumer/zookeeper/client.connect makes a KazooClient (the test kit aside)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zkconsumer"
FACTORY = PACKAGE / "zookeeper" / "client.py"
KIT = PACKAGE / "testing"  # the test kit's own clients start servers and read their state


def kazoo_client_calls(path: Path) -> list[int]:
    """Lines of `path` that call KazooClient(...) by that name or as kazoo.client.KazooClient."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "KazooClient":
                lines.append(node.lineno)
    return lines


def test_only_the_factory_makes_a_kazoo_client() -> None:
    makers = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in PACKAGE.rglob("*.py")
        if KIT not in path.parents and (lines := kazoo_client_calls(path))
    }
    assert makers == {"zkconsumer/zookeeper/client.py": makers.get("zkconsumer/zookeeper/client.py", [])}, makers
    assert len(makers["zkconsumer/zookeeper/client.py"]) == 1


def test_the_scan_sees_a_client_made_elsewhere(tmp_path: Path) -> None:
    made = tmp_path / "made.py"
    made.write_text("import kazoo.client\nc = kazoo.client.KazooClient(hosts='x')\nd = KazooClient()\n")
    assert kazoo_client_calls(made) == [2, 3]
