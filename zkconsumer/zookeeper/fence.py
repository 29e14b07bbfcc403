"""The session fence: the first operation of every claim, release and commit transaction, so that
ZooKeeper itself refuses a write that no longer comes from the session the member registered in.

When a member registers it also creates a fence node, `/consumers/<g>/zkconsumer/sessions/<id>-<n>`:
ephemeral, so it exists exactly while the session that created it lives, and sequential, so no
other session ever holds that path (not even a restarted process with the same consumer id, whose
registration node would have the same path and version as ours). kazoo holds one session at a
time, so a transaction that begins with `check(fence node, 0)` succeeds only if it is sent in the
session that registered: after an expiry, kazoo's new session finds the node gone (NoNode) and the
whole transaction fails, whatever the attempt that sent it believed. Nothing here relies on timing
or on what a cache says. "Ours" means the same here and in `GroupZk.is_registered`: the node exists,
in our session, at version 0; a node someone deleted or wrote to by hand fails the check, the
member hears of it (OwnershipSignals.refused) and its next attempt registers and fences again.
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
        ended, or someone deleted it) or was written to (its version is no longer 0)."""
        return bool(results) and isinstance(results[0], (NoNodeError, BadVersionError))

    def lost(self, what: str, results: list[Any] | None = None) -> SessionLost:
        """The error for a write refused on the fence, saying which of the two it was."""
        if results and isinstance(results[0], BadVersionError):
            cause = "was written to since we created it (its version is no longer 0: by hand or by a tool)"
        else:
            cause = "is gone (the session ended, or the node was deleted)"
        return SessionLost(
            f"ZooKeeper refused {what}: the fence node {self.path} of session 0x{self.session:x} {cause}; "
            "registering again"
        )

    def holds(self, stat: Any) -> bool:
        """Whether a fresh stat of the fence node says the check would pass: our session's, version 0."""
        return stat is not None and stat.ephemeralOwner == self.session and stat.version == 0
