"""The one place zkconsumer reaches into kazoo's private connection loop (eager_io.py, batches.py,
watch_rearm.py): only on the kazoo releases that code was written and tested against, else stock kazoo.

Those patches replace `ConnectionHandler._read`, `_write`, `_read_socket` and `_send_request` and
read `_queue`, `_pending`, `_xid` and the test hooks of kazoo's connection module. A kazoo
release that keeps those names but changes what they hold would fail inside kazoo's connection
thread, so a name check is not enough: the kazoo version must be one listed here. Everything
else (the poll handler, the session timeout read off the handshake) uses kazoo's public
extension points and runs on every version.

What they buy: about 40 % less CPU per ZooKeeper request, which is what lets 64 members over
4,096 partitions in one process settle a change in seconds (docs/performance.md). Set
ZKCONSUMER_KAZOO_BATCHES=0 to run stock kazoo on a tested version too.

watch_rearm.py moves kazoo's watch tables (`_data_watchers`, `_child_watchers`) inside its state
change and queues SetWatches at the head of `_queue`, relative to `last_zxid`: `rearm_wanted`
checks the version and that shape. What it buys: a ZooKeeper blip costs the exporter one request
per node that changed meanwhile instead of a re-read of every node it watches (docs/performance.md).
ZKCONSUMER_KAZOO_REARM=0 keeps kazoo's stock path (every watch fires, everything is re-read).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict, deque
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["TESTED_KAZOO_VERSIONS", "install", "kazoo_version", "rearm_wanted", "wanted"]

# The kazoo releases eager_io.py and batches.py were written against and are tested with
# (scripts/test.sh installs the one in scripts/constraints.txt).
TESTED_KAZOO_VERSIONS = frozenset({"2.11.0"})
SWITCH = "ZKCONSUMER_KAZOO_BATCHES"
REARM_SWITCH = "ZKCONSUMER_KAZOO_REARM"

_said: set[str] = set()  # what was logged once per process


def kazoo_version() -> str:
    from kazoo.version import __version__

    return str(__version__)


def wanted() -> bool:
    """Whether kazoo's loop should be patched here: a tested kazoo version and not switched off.
    Logs once per process why not."""
    version = kazoo_version()
    return _on_and_tested(
        SWITCH,
        f"{SWITCH} is off: stock kazoo {version}, no batched ZooKeeper requests",
        f"kazoo {version} is not one zkconsumer's batched ZooKeeper requests were tested with "
        f"({', '.join(sorted(TESTED_KAZOO_VERSIONS))}): stock kazoo, no batching "
        "(more CPU per request in large groups, the same behaviour)",
    )


def _on_and_tested(switch: str, said_off: str, said_untested: str) -> bool:
    """The gate every use of kazoo's internals shares: its environment switch not off and kazoo one of
    TESTED_KAZOO_VERSIONS; else logs (once) why not and says no."""
    if os.environ.get(switch, "1").strip().lower() in ("0", "false", "no", "off"):
        _once(said_off)
        return False
    if kazoo_version() not in TESTED_KAZOO_VERSIONS:
        _once(said_untested)
        return False
    return True


def rearm_wanted(client: Any) -> bool:
    """Whether watch_rearm.py may keep this KazooClient's watches across a reconnect: a tested kazoo,
    not switched off, and the client's private fields of the shape that code moves. Logs once per
    process why not (the stock path: every blip re-reads everything watched)."""
    version = kazoo_version()
    if not _on_and_tested(
        REARM_SWITCH,
        f"{REARM_SWITCH} is off: kazoo's stock reconnect, every watch fires and is re-read",
        f"kazoo {version} is not one zkconsumer's watch re-arm was tested with "
        f"({', '.join(sorted(TESTED_KAZOO_VERSIONS))}): kazoo's stock reconnect, every watch re-read",
    ):
        return False
    odd = _rearm_shape(client)
    if odd:
        _once(
            f"kazoo {version}'s client is not as the watch re-arm expects ({odd}): stock reconnect, every watch re-read"
        )
        return False
    return True


def _rearm_shape(client: Any) -> str | None:
    """What of the client is not as watch_rearm.py expects, or None."""
    for name in ("_data_watchers", "_child_watchers"):
        table = getattr(client, name, None)
        if not isinstance(table, defaultdict) or table.default_factory is not set:
            return f"{name} is {type(table).__name__}, not defaultdict(set)"
    if not isinstance(getattr(client, "last_zxid", None), int):
        return "no int last_zxid"
    if not isinstance(getattr(client, "_queue", None), deque):
        return "no deque _queue"
    if not hasattr(client, "_session_id"):
        return "no _session_id"
    if not hasattr(getattr(client, "_connection", None), "_write_sock"):
        return "no _connection._write_sock"
    handler = getattr(client, "handler", None)
    if not (callable(getattr(handler, "async_result", None)) and callable(getattr(handler, "dispatch_callback", None))):
        return "a handler without async_result/dispatch_callback"
    return None


def install(client: Any) -> bool:
    """Patch this KazooClient's connection (eager reads and writes, batched requests) if `wanted()`;
    True if installed, False if the client runs stock kazoo."""
    if not wanted():
        return False
    from zkconsumer.zookeeper.batches import use_batches
    from zkconsumer.zookeeper.eager_io import use_eager_io

    connection = client._connection
    return use_eager_io(connection) and use_batches(connection)


def _once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        log.info("%s", message)
