"""MemberJoined: a fenced delete's transaction failed because a member may have registered meanwhile."""

from __future__ import annotations

from zkconsumer.errors import ZkConsumerError


class MemberJoined(ZkConsumerError):
    """A transaction's fence failed or a node appeared: look whether a member registered."""
