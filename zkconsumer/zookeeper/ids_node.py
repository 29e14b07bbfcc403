"""IdsNode: a group's ids/ node as found before a fenced delete, to recreate between its transactions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kazoo.security import ACL


@dataclass(frozen=True)
class IdsNode:
    """ids/ as found before the deletes: recreated with its data and ACL between transactions."""

    path: str
    exists: bool
    data: bytes = b""
    acl: tuple[ACL, ...] = ()
