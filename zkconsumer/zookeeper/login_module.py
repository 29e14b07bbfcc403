"""LoginModule: one login module entry of a JAAS section (its class, flag and options)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class LoginModule:
    name: str
    flag: str
    options: Mapping[str, str]
