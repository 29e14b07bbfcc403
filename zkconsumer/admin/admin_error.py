"""AdminError: an ops-library call that could not, or would not, do what it was asked; the message names the group, topic or node."""

from __future__ import annotations

from collections.abc import Sequence

from zkconsumer.errors import ZkConsumerError


class AdminError(ZkConsumerError):
    """What went wrong, in one line that names the group, topic or node.

    `bad_request`: the request itself cannot be carried out as given (a partition that does not
    exist, an offset outside the log): asking again unchanged fails again; the command line exits
    2 for it, 1 otherwise. `details`: one line per offending row, said before the message.
    """

    def __init__(self, message: str, *, bad_request: bool = False, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.bad_request = bad_request
        self.details = tuple(details)
