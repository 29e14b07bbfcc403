"""InputError: user-supplied text (a file line, an option value) that cannot be used; the message says where."""

from __future__ import annotations

from zkconsumer.errors import ZkConsumerError


class InputError(ZkConsumerError, ValueError):
    """User-supplied text (a file line, an option value) that cannot be used; the message says where."""
