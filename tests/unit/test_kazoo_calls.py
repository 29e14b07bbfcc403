"""No kazoo call outside zkconsumer/zookeeper/: a ZooKeeper request on a KazooClient is made there (the test kit aside)."""

from __future__ import annotations

import ast
from pathlib import Path

from kazoo.client import KazooClient

PACKAGE = Path(__file__).resolve().parents[2] / "zkconsumer"
ALLOWED = (PACKAGE / "zookeeper", PACKAGE / "testing")  # the wrappers, and the test kit's own clients
# Subscribing to the session's state and starting or stopping the client send no request.
NOT_REQUESTS = {"add_listener", "remove_listener", "start", "stop", "close", "restart"}
REQUESTS = {name for name in dir(KazooClient) if not name.startswith("_") and callable(getattr(KazooClient, name))}
# Set on each client in its __init__ (a client never started sends nothing): the retrying call and
# the recipes (Lock, ChildrenWatch, ...), each of which makes requests.
_UNSTARTED = KazooClient(hosts="127.0.0.1:1")
REQUESTS |= {name for name, value in vars(_UNSTARTED).items() if not name.startswith("_") and callable(value)}
REQUESTS -= NOT_REQUESTS


def _receiver(node: ast.expr) -> str:
    """The name a method is called on: `client` in client.get(...) and self.group.client.get(...)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def kazoo_calls(path: Path) -> list[str]:
    """`line: call` for each request method of KazooClient called on something named like a client."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = _receiver(node.func.value).lower()
        if node.func.attr in REQUESTS and ("client" in receiver or receiver in {"zk", "_zk", "kazoo"}):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_no_kazoo_request_outside_the_zookeeper_package() -> None:
    callers = {
        str(path.relative_to(PACKAGE.parent)): calls
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(folder in path.parents for folder in ALLOWED) and (calls := kazoo_calls(path))
    }
    assert callers == {}, f"call these through zkconsumer/zookeeper/ (reads, client.ZkIO, ...): {callers}"


def test_the_scan_sees_each_way_of_calling(tmp_path: Path) -> None:
    made = tmp_path / "made.py"
    made.write_text(
        "client.get('/a')\n"
        "self.group.client.transaction()\n"
        "zk.get_children_async('/b')\n"
        "client.retry(client.exists, '/c')\n"
        "client.add_listener(f)\n"  # no request
        "io.exists('/d')\n"  # ZkIO: the bounded wrapper
        "offsets.get(key)\n"  # a dict
    )
    assert kazoo_calls(made) == [
        "1: client.get",
        "2: self.group.client.transaction",
        "3: zk.get_children_async",
        "4: client.retry",
    ]


def test_the_rule_covers_the_requests_kazoo_has() -> None:
    assert {"get", "exists", "get_children", "create", "delete", "set", "transaction", "retry", "Lock"} <= REQUESTS
    assert "add_listener" not in REQUESTS
