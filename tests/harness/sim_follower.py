"""The lost-follower actor: the server a member talks to lost its leader and keeps answering reads from its own copy.

ZooKeeper lets a follower that stopped hearing from its leader go on serving for up to
syncLimit × tickTime before it gives the leader up and drops its clients. Meanwhile it answers
reads from the tree as it was when the link broke; it cannot answer a write or a sync (both go
through the leader); and the leader, told nothing of the member's session any more, expires it
after the session timeout. `LostFollower` puts one member's client behind such a server:
`cut()` when the link breaks, `give_up()` when the follower drops its clients (the member is
left SUSPENDED, unable to reconnect until the driver calls `model.reconnect`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from harness.zkfake import FakeKazooClient, SimAsync
from harness.zkmodel import Call, ZkModel

_READS = ("exists", "get", "get_children")


class LostFollower:
    """One member's server, cut from its leader.

    Example::

        follower = LostFollower(model, member.client)
        follower.cut()              # reads answered from the copy of now; writes and syncs unanswered
        model.advance(3000)         # the leader expires the session after its timeout
        follower.give_up()          # syncLimit × tickTime later: the follower drops its clients
    """

    answered: tuple[str, ...] = _READS  # what it answers alone (a sync goes to the leader: not here)

    def __init__(self, model: ZkModel, client: FakeKazooClient) -> None:
        self.model = model
        self.client = client
        self._copy: dict[str, Any] | None = None

    def cut(self) -> None:
        model, client = self.model, self.client
        self._copy = copy.deepcopy(model._nodes)
        # The leader hears nothing more of this client's session: no ping or request reaches it.
        unheard: set[FakeKazooClient] | None = getattr(model, "_unheard", None)
        if unheard is None:
            unheard = model._unheard = set()  # type: ignore[attr-defined]
            model._heard = lambda s: ZkModel._heard(model, s) and s.client not in unheard  # type: ignore[method-assign]
        unheard.add(client)
        client._request = self._answer  # type: ignore[method-assign]

    def _answer(self, op: str, path: str, apply: Callable[[Any], Any], arm: Callable[[], None] = lambda: None) -> Any:
        model, client = self.model, self.client
        if op not in self.answered:
            model.calls.append(Call(client.name, op, path))
            return SimAsync(done=False)  # forwarded to a leader it cannot reach: no answer
        session = client._session
        heard = session.last_heard if session is not None else None
        # No fault hook meanwhile: one that moves time on would expire sessions in the follower's copy.
        real, model._nodes = model._nodes, self._copy  # type: ignore[assignment]
        hook, model._hook = model._hook, None
        try:
            return FakeKazooClient._request(client, op, path, apply, arm)
        finally:
            model._nodes, model._hook = real, hook
            if session is not None and heard is not None:
                session.last_heard = heard  # answered by the follower alone: the leader heard nothing

    def give_up(self) -> None:
        """The follower drops its clients (syncLimit × tickTime after the cut): SUSPENDED, no reconnect."""
        self.model.disconnect(self.client)  # first: the leader must not count the drop as hearing from it
        del self.client._request  # back to the class's
        unheard: set[FakeKazooClient] = self.model._unheard  # type: ignore[attr-defined]
        unheard.discard(self.client)
        if not unheard:
            del self.model._heard, self.model._unheard  # type: ignore[attr-defined]
