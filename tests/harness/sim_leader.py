"""The isolated-leader actor: the leader a member talks to was cut from the majority and answers syncs until its quorum check fails.

ZooKeeper's sync is not a quorum operation: a leader that lost the majority goes on answering
syncs (and reads) from its own tree until its own quorum check fails, up to one tickTime T
after the majority elected a new leader, which counts the member's session from the election
(t0) and expires it at t0 + S. A renewal confirmed by such a sync leases as if the session were
heard of until T after the cut: with the lease's arithmetic (config/timing.py,
`sync_renewal_safe`) that outlives the session where T > 0.35 S (issue 51, finding 4).
`IsolatedLeader` puts one member's client behind such a leader: `cut()` at the election, and
`give_up()` T later, when it steps down and drops its clients.
"""

from __future__ import annotations

from harness.sim_follower import LostFollower

_ANSWERED = ("exists", "get", "get_children", "sync")


class IsolatedLeader(LostFollower):
    """One member's server: the old leader, cut from the majority; reads and syncs answered from
    its copy, writes unanswered (they need the majority), the session unheard by the new leader.

    Example::

        leader = IsolatedLeader(model, member.client)
        leader.cut()                # the majority elects a new leader, which counts the session from now
        model.advance(tick_ms)      # syncs still answered: a sync renewal extends the lease
        leader.give_up()            # its quorum check failed: it drops its clients
    """

    answered = _ANSWERED
