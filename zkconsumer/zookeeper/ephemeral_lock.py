"""A lock that is one ephemeral node: taken by creating it, held while this session lives, given back by deleting it."""

from __future__ import annotations

import contextlib
from typing import Any

from kazoo.exceptions import NodeExistsError

__all__ = ["holds", "release", "take"]


def take(client: Any, path: str, data: bytes) -> str | None:
    """Create the lock node (and its parents) holding `data`: None when taken, else what the
    holder wrote into it ("a run that just ended" when it went between the two requests)."""
    try:
        client.create(path, data, ephemeral=True, makepath=True)
        return None
    except NodeExistsError:
        try:
            held: bytes = client.get(path)[0]
            return held.decode(errors="replace")
        except Exception:  # noqa: BLE001 - it ended between the two requests: report it as it was
            return "a run that just ended"


def holds(client: Any, path: str) -> bool:
    """Is the lock node there and held by this client's session? (no answer: not known to be ours)"""
    try:
        stat = client.exists(path)
    except Exception:  # noqa: BLE001 - no answer: not known to be ours
        return False
    return stat is not None and client.client_id is not None and stat.ephemeralOwner == client.client_id[0]


def release(client: Any, path: str) -> None:
    """Delete the lock node if this session still holds it; a failure leaves it to the session's end."""
    if holds(client, path):  # never another run's: ours went with a lost session
        with contextlib.suppress(Exception):
            client.delete(path)
