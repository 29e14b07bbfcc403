"""The chaos invariants on hand-made histories: each rule flags what it must and nothing else (no cluster)."""

from __future__ import annotations

import pytest

from harness import chaos_invariants as inv
from harness.chaos_history import Commit, Delivery, History, Incarnation, Note, Presence, Span

pytestmark = [pytest.mark.chaos]

T = "t"


def deliveries(member: str, offsets: range, start: float, step: float = 0.1) -> list[Delivery]:
    return [Delivery(member, T, 0, 0, o, start + i * step) for i, o in enumerate(offsets)]


def handover(*, b_from: int, a_session_lost: bool, a_commit: int = 10, a_left: bool = False) -> History:
    """A owns t-0 during [0, 5] and delivers 0..9; B owns it from 5.2 and delivers b_from..19."""
    h = History(acked={(T, 0, 0, o) for o in range(20)}, since=0.0, until=12.0)
    h.presence = [Presence(T, 0, -1.0)]
    h.spans = [Span(T, 0, "A-0", 1, 0.0, 5.0), Span(T, 0, "B-0", 2, 5.2, None)]
    h.incarnations = [Incarnation("A", 11, -1.0, 5.0 if a_session_lost else None), Incarnation("B", 12, 4.0)]
    h.commits = [Commit(T, 0, a_commit, 4.9)]
    h.notes = [Note("leave", "A", 4.8)] if a_left else []
    h.deliveries = deliveries("A", range(10), 0.5) + deliveries("B", range(b_from, 20), 5.5)
    return h


def test_clean_handover_is_clean() -> None:
    h = handover(b_from=10, a_session_lost=False)
    assert inv.lost(h) == [] and inv.overlaps(h) == [] and inv.duplicates(h) == []
    assert inv.unowned_windows(h)[(T, 0)] == pytest.approx(0.2)


def test_in_flight_message_of_a_clean_handover_is_allowed_but_no_more() -> None:
    assert all(d.allowed for d in inv.duplicates(handover(b_from=9, a_session_lost=False, a_commit=9)))
    bad = inv.duplicates(handover(b_from=7, a_session_lost=False, a_commit=7, a_left=True))
    assert [d.allowed for d in bad] == [True, False, False]  # 7 was in flight; 8 and 9 were not


def test_redelivery_after_a_lost_session_is_allowed_from_the_last_commit() -> None:
    dups = inv.duplicates(handover(b_from=6, a_session_lost=True, a_commit=6))
    assert len(dups) == 4 and all(d.allowed for d in dups)
    rewound = inv.duplicates(handover(b_from=3, a_session_lost=True, a_commit=6))
    assert [o.previous.offset for o in rewound if not o.allowed] == [3, 4, 5]


def test_a_clean_leave_is_not_a_lost_session() -> None:
    dups = inv.duplicates(handover(b_from=6, a_session_lost=True, a_commit=6, a_left=True))
    assert sum(not d.allowed for d in dups) == 3


def test_zombie_delivery_overlaps_the_new_owner() -> None:
    h = handover(b_from=10, a_session_lost=True)
    h.deliveries.append(Delivery("A", T, 0, 0, 15, 6.3))  # A, no longer owner, delivers mid-way through B
    found = inv.overlaps(h)
    assert len(found) == 1 and {found[0].a.owned, found[0].b.owned} == {True, False}
    assert [d.allowed for d in inv.duplicates(h)] == [False]  # B delivered 15 first and still owns it
    assert len(inv.stray_deliveries(h)) == 1


def test_strays_of_a_session_closed_from_outside_count_only_past_the_notice() -> None:
    # The driver closes A's session at 5.0 from a twin client; A hears of it on reconnecting.
    h = handover(b_from=10, a_session_lost=True)
    h.notes = [Note("expire", "A", 4.95), Note("session closed", "A", 5.0)]
    h.deliveries.append(Delivery("A", T, 0, 0, 11, 5.7))  # before it could hear: reported, not judged
    assert inv.overlaps(h) == [] and all(d.allowed for d in inv.duplicates(h))
    assert [iv.count for iv in inv.forced_close_strays(h)] == [1]
    h.deliveries.append(Delivery("A", T, 0, 0, 17, 6.25))  # past FORCED_CLOSE_NOTICE: an overlap again
    assert len(inv.overlaps(h)) == 1
    assert [d.allowed for d in inv.duplicates(h)] == [True, False]


def test_loss_and_gaps() -> None:
    h = handover(b_from=11, a_session_lost=False, a_commit=11)
    assert inv.lost(h) == [(T, 0, 0, 10)]
    h.spans[1] = Span(T, 0, "B-0", 2, 8.0, None)
    assert inv.unowned_windows(h)[(T, 0)] == pytest.approx(3.0)


def test_epochs_separate_topic_incarnations() -> None:
    h = handover(b_from=10, a_session_lost=False)
    h.epoch_starts = {(T, 1): 11.0}
    h.acked.add((T, 1, 0, 0))
    h.deliveries.append(Delivery("B", T, 1, 0, 0, 11.5))  # offset 0 again, but of the new topic
    assert inv.duplicates(h) == [] and inv.lost(h) == []
    h.commits.append(Commit(T, 0, 1, 11.6))
    assert inv.commit_regressions(h) == []
    h.commits.append(Commit(T, 0, 0, 11.7))
    assert len(inv.commit_regressions(h)) == 1


def test_stray_delivery_right_after_a_lost_session_is_judged_by_that_session() -> None:
    h = handover(b_from=10, a_session_lost=True)
    h.deliveries.append(Delivery("A", T, 0, 0, 10, 5.1))  # after its owner node vanished, before B started
    dups = inv.duplicates(h)
    assert [d.allowed for d in dups] == [True] and len(inv.stray_deliveries(h)) == 1
    assert inv.overlaps(h) == []  # B began after it: no two members at once
    h.deliveries.append(Delivery("C", T, 0, 0, 11, 5.2))  # C never owned t-0
    assert [d.allowed for d in inv.duplicates(h)] == [True, False]


def test_a_frozen_or_dead_owner_leaves_its_partition_unowned() -> None:
    h = handover(b_from=10, a_session_lost=True)
    h.notes = [Note("stop", "B", 7.0), Note("cont", "B", 9.0)]
    assert inv.unowned_windows(h)[(T, 0)] == pytest.approx(2.0)
    h.notes.append(Note("kill", "B", 10.0))
    assert inv.unowned_windows(h)[(T, 0)] == pytest.approx(2.0)  # killed at 10, judged until 12
    h.notes.append(Note("cut", "A", 1.0))
    assert inv.unowned_windows(h)[(T, 0)] == pytest.approx(4.2)  # A cut off from 1 until its node went at 5


def test_an_owner_node_gone_while_its_member_was_cut_off_went_with_the_session() -> None:
    # Seen in a 200-event run on a loaded machine: the observer saw A's member node vanish 0.51 s
    # after its owner node (one session close), so the timing rule alone called it a clean handover.
    h = handover(b_from=6, a_session_lost=True, a_commit=6)
    h.incarnations[0] = Incarnation("A", 11, -1.0, 5.51)
    assert sum(not d.allowed for d in inv.duplicates(h)) == 3  # timing alone: misjudged
    h.notes = [Note("cut", "A", 1.0), Note("heal", "A", 9.0)]
    assert all(d.allowed for d in inv.duplicates(h))  # it could not have released it
    h.notes = [Note("cut", "A", 1.0), Note("heal", "A", 4.0)]  # healed before: it could have
    assert sum(not d.allowed for d in inv.duplicates(h)) == 3


def test_a_late_observed_end_is_bounded_by_the_next_owners_claim() -> None:
    # The observer noticed A's node gone at 6.0 (it lagged after a ZooKeeper restart), but B's node
    # on the same path was created at 5.2: A's ownership ended by then, so B re-delivering A's
    # uncommitted tail after a lost session is allowed.
    h = handover(b_from=6, a_session_lost=True, a_commit=6)
    h.spans[0] = Span(T, 0, "A-0", 1, 0.0, 6.0)
    h.incarnations[0] = Incarnation("A", 11, -1.0, 6.0)
    assert all(d.allowed for d in inv.duplicates(h))


def test_an_owner_node_alive_when_its_session_was_expired_went_with_it() -> None:
    # Seed 13: the observer saw the member node vanish 0.53 s before the owner node after the
    # driver expired the session; the member then re-registered and re-delivered from its commit.
    h = handover(b_from=6, a_session_lost=True, a_commit=6)
    h.incarnations[0] = Incarnation("A", 11, -1.0, 4.45)
    assert sum(not d.allowed for d in inv.duplicates(h)) == 3  # timing alone: misjudged
    h.notes = [Note("expire", "A", 4.4)]
    assert all(d.allowed for d in inv.duplicates(h))
    h.notes = [Note("expire", "A", 5.3)]  # expired after the handover
    assert sum(not d.allowed for d in inv.duplicates(h)) == 3


def test_settled_ends_decide_session_loss_whatever_the_observer_saw() -> None:
    # Seed 3 under a CPU hog: ZooKeeper expired A's session at 5.0, the observer noticed 1.5 s
    # late, and the driver asked A to leave at 5.5 -- in between. Observed times alone made it a
    # clean handover and flagged A's uncommitted tail, which B re-delivered, as duplicates.
    def judged(ended_by: str | None, end: float, *notes: Note) -> list[bool]:
        h = handover(b_from=6, a_session_lost=True, a_commit=6)
        h.spans[0] = Span(T, 0, "A-0", 1, 0.0, end, ended_by=ended_by)
        h.incarnations[0] = Incarnation("A", 11, -1.0, end)
        h.notes = [Note("leave", "A", 5.5), *notes]
        return [d.allowed for d in inv.duplicates(h)]

    assert judged(None, 6.5).count(False) == 3  # observed: misjudged
    assert all(judged("expiry", 5.0))
    assert judged("delete", 5.0).count(False) == 3  # A deleted it itself: a hand-over
    # A client closing the session counts as lost only when the driver did it (its expire action).
    assert judged("close", 5.0).count(False) == 3
    assert all(judged("close", 5.0, Note("expire", "A", 4.99)))


def test_settle_takes_exact_ends_from_the_servers_log() -> None:
    from harness.zk_txnlog import NodeEnd

    h = handover(b_from=10, a_session_lost=False)
    owner, member = "/c/consumers/g/owners/t/0", "/c/consumers/g/ids/A"
    ends = {
        (owner, 1): NodeEnd(owner, 1, 77, 4_800, 77, "expiry"),
        (member, 11): NodeEnd(member, 11, 77, 4_800, 77, "expiry"),
        ("/c/consumers/g/owners/t/0", 2): NodeEnd(owner, 2, 78, 9_000, 79, "delete"),
    }
    assert h.settle(ends, "g", "/c", lambda ms: ms / 1000.0) == 3
    assert (h.spans[0].end, h.spans[0].ended_by) == (4.8, "expiry")
    assert (h.incarnations[0].end, h.incarnations[0].ended_by) == (4.8, "expiry")
    assert (h.spans[1].end, h.spans[1].ended_by) == (9.0, "deleted-by-other")
    assert h.incarnations[1].ended_by is None  # not in the log: left as observed
