"""The session fence: the first operation of every claim, release and commit transaction, so that
ZooKeeper itself refuses a write that no longer comes from the session the member registered in.

When a member registers it also creates a fence node, `/consumers/<g>/zkconsumer/sessions/<id>-<n>`:
ephemeral, so it exists exactly while the session that created it lives, and sequential, so no
other session ever holds that path (not even a restarted process with the same consumer id, whose
registration node would have the same path and version as ours). kazoo holds one session at a
time, so a transaction that begins with `check(fence node, 0)` succeeds only if it is sent in the
session that registered: after an expiry, kazoo's new session finds the node gone (NoNode) and the
whole transaction fails, whatever the attempt that sent it believed. Nothing here relies on timing
or on what a cache says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from zkconsumer.errors import SessionLost

__all__ = ["SessionFence"]


@dataclass(frozen=True)
class SessionFence:
    """The fence node a member's writes are checked against, and the session that created it."""

    path: str
    session: int

    def guard(self, txn: Any) -> None:
        """Make the fence the transaction's next (first) operation."""
        txn.check(self.path, 0)  # created at version 0 and never written

    def refused(self, results: list[Any]) -> bool:
        """Whether a transaction's results say the fence failed: the fence node is gone (its session
        ended, or someone deleted it)."""
        return bool(results) and isinstance(results[0], (NoNodeError, BadVersionError))

    def lost(self, what: str) -> SessionLost:
        return SessionLost(
            f"ZooKeeper refused {what}: the fence node {self.path} of session 0x{self.session:x} is gone "
            "(the session ended, or the node was deleted); registering again"
        )
