"""UnknownGroup: the group asked for has no /consumers/<group> node."""

from __future__ import annotations

from zkconsumer.errors import ZkConsumerError


class UnknownGroup(ZkConsumerError, LookupError):
    """No /consumers/<group>: the message names the node."""
