"""The session fence: the first operation of every claim, release and commit transaction, so that
ZooKeeper itself refuses a write that no longer comes from the session the member registered in.

A member's registration (`/consumers/<g>/ids/<id>`) is an ephemeral node: it exists exactly while
the session that created it lives. kazoo holds one session at a time, so a transaction that
begins with `check(registration, version)` succeeds only if it is sent in that session: after an
expiry, kazoo's new session finds the node gone (NoNode) and the whole transaction fails, whatever
the attempt that sent it believed. Nothing here relies on timing or on what a cache says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from zkconsumer.errors import SessionLost

__all__ = ["SessionFence"]


@dataclass(frozen=True)
class SessionFence:
    """The registration a member's writes are fenced on: its node, the session it was created in,
    and its version then (the member re-writes it only when it registers)."""

    member_path: str
    session: int
    version: int

    def guard(self, txn: Any) -> None:
        """Make the fence the transaction's next (first) operation."""
        txn.check(self.member_path, self.version)

    def refused(self, results: list[Any]) -> bool:
        """Whether a transaction's results say the fence failed: the registration is gone (its
        session ended, or someone deleted it) or was re-written (registered again)."""
        return bool(results) and isinstance(results[0], (NoNodeError, BadVersionError))

    def lost(self, what: str) -> SessionLost:
        return SessionLost(
            f"ZooKeeper refused {what}: {self.member_path} of session 0x{self.session:x} is gone or re-written "
            "(the session ended, or the member node was deleted); registering again"
        )
