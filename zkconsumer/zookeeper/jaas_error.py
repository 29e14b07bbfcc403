"""JaasError: a JAAS file or inline configuration that cannot be used; the message says where."""

from __future__ import annotations

from zkconsumer.errors import ZkConsumerError


class JaasError(ZkConsumerError, ValueError):
    """A JAAS text that cannot be read, or one without the login section or options we need. A setting to fix."""
