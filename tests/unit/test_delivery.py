"""The C-speed iterator: stopping mid-chunk (release, gate, lease), exact positions, batches, and a model check."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import SLICE, ConsumerIterator, DeliveryGate, LeaseGuard
from zkconsumer.errors import ConsumerTimeout


def make_info(queue: StreamQueue, partition: int = 0, offset: int = 0) -> PartitionTopicInfo:
    return PartitionTopicInfo("t", partition, "thread-0", queue, offset)


def one_chunk_behind_a_gate(count: int) -> tuple[DeliveryGate, PartitionTopicInfo, ConsumerIterator]:
    """A gate, and an iterator with one queued chunk of `count` messages (offsets 0..count-1) behind it."""
    q = StreamQueue(2)
    gate = DeliveryGate()
    info = make_info(q)
    q.offer(chunk(info, 0, count))
    return gate, info, ConsumerIterator(q, consumer_timeout_ms=10, gate=gate)


def chunk(info: PartitionTopicInfo, start: int, count: int) -> Chunk:
    return Chunk(
        info, [Message(topic="t", partition=info.partition, offset=o, value=b"v") for o in range(start, start + count)]
    )


def test_for_loops_hand_out_confluent_messages_and_continue_after_a_timeout() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    q.offer(chunk(info, 0, 3))
    got = []
    with pytest.raises(ConsumerTimeout):
        for msg in it:
            got.append(msg.offset())
    q.offer(chunk(info, 3, 2))
    with pytest.raises(ConsumerTimeout):
        for msg in it:  # a new loop after the timeout picks up where the last one stopped
            got.append(msg.offset())
    assert got == [0, 1, 2, 3, 4] and isinstance(msg, Message)
    assert info.consumed_offset == 5  # asking for more after 4 finished it


def test_positions_are_read_from_the_live_chunk() -> None:
    q = StreamQueue(2)
    info = make_info(q, offset=10)
    q.offer(chunk(info, 10, 4))
    it = iter(ConsumerIterator(q, consumer_timeout_ms=10))
    assert info.consumed_offset == 10
    assert next(it).offset() == 10 and info.consumed_offset == 10  # 10 is being processed
    assert next(it).offset() == 11 and info.consumed_offset == 11
    assert [next(it).offset(), next(it).offset()] == [12, 13] and info.consumed_offset == 13
    with pytest.raises(ConsumerTimeout):
        next(it)
    assert info.consumed_offset == 14 and info.live is None


def test_a_release_from_another_thread_stops_the_chunk_before_its_next_message() -> None:
    q = StreamQueue(2)
    a, b = make_info(q, 0), make_info(q, 1)
    q.offer(chunk(a, 0, 1000))
    q.offer(chunk(b, 0, 3))
    it = ConsumerIterator(q, consumer_timeout_ms=50)
    got: list[tuple[int, int]] = []
    release_after = 300

    def release() -> None:
        while len(got) < release_after:
            time.sleep(0.0005)
        a.active = False
        released_at.append(len(got))

    released_at: list[int] = []
    t = threading.Thread(target=release)
    t.start()
    with pytest.raises(ConsumerTimeout):
        for msg in it:
            got.append((msg.partition(), msg.offset()))
            if msg.partition() == 0:
                time.sleep(0.0002)  # slow enough for the other thread to act mid-chunk
    t.join(5)
    of_a = [o for p, o in got if p == 0]
    assert of_a == list(range(len(of_a))) and len(of_a) < 1000
    assert len(of_a) <= released_at[0] + 1  # at most the message being handed out as it happened
    assert [o for p, o in got if p == 1] == [0, 1, 2]
    assert a.consumed_offset == len(of_a)  # b's first message was asked for after a's last


def test_a_closed_gate_stops_mid_chunk_and_the_rest_follows_when_it_reopens() -> None:
    q = StreamQueue(2)
    gate = DeliveryGate()
    info = make_info(q)
    q.offer(chunk(info, 0, 10))
    iterator = ConsumerIterator(q, consumer_timeout_ms=20, gate=gate)
    it = iter(iterator)
    assert [next(it).offset() for _ in range(4)] == [0, 1, 2, 3]
    gate.close()
    with pytest.raises(ConsumerTimeout, match="delivery paused"):
        next(it)
    assert info.consumed_offset == 4  # 3 was finished when more was asked for; 4 never went out
    gate.reopen()
    assert [m.offset() for m in _take(iter(iterator), 6)] == [4, 5, 6, 7, 8, 9]  # the stream's next loop


def _take(it, n: int) -> list[Message]:  # type: ignore[no-untyped-def]
    return [next(it) for _ in range(n)]


def test_a_lapsed_lease_stops_a_chunk_already_being_delivered() -> None:
    q = StreamQueue(2)
    gate = DeliveryGate()
    guard = LeaseGuard(gate, "test", poll_s=0.05)
    try:
        info = make_info(q)
        q.offer(chunk(info, 0, 100_000))
        iterator = ConsumerIterator(q, consumer_timeout_ms=50, gate=gate)
        got = []
        lease_until = gate.clock() + 0.3
        gate.renew(lease_until)
        with pytest.raises(ConsumerTimeout, match="delivery paused"):
            for msg in iterator:
                got.append(msg.offset())
                time.sleep(0.00001)
        assert lease_until <= gate.clock() <= lease_until + 1.5 and 0 < len(got) < 100_000
        assert got == list(range(len(got)))
        gate.renew(gate.clock() + 60)
        more = [m.offset() for m in _take(iter(iterator), 5)]
        assert more == list(range(len(got), len(got) + 5))  # nothing skipped, nothing repeated
    finally:
        gate.end()
        guard.stop(timeout=5.0)


def test_next_batch_takes_over_the_rest_of_a_live_chunk() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 5))
    q.offer(chunk(info, 5, 2))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    fast = iter(it)
    assert next(fast).offset() == 0
    assert [m.offset() for m in it.next_batch()] == [1, 2, 3, 4] and info.consumed_offset == 1
    assert [m.offset() for m in it.next_batch()] == [5, 6] and info.consumed_offset == 5
    assert [m.offset() for m in _take(iter(it), 0)] == []
    it.mark_consumed()
    assert info.consumed_offset == 7


def test_a_commit_racing_a_stopped_chunk_never_counts_a_message_not_handed_out() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 5))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    fast = iter(it)
    assert [next(fast).offset(), next(fast).offset()] == [0, 1]
    live = info.live
    assert live is not None
    live.halt()  # a release from another thread...
    next(live.cursor)  # ...and compress pulling message 2 before noticing, as its next step would
    it.mark_consumed()  # a commit_offsets() in that instant
    assert info.consumed_offset == 2  # 1 was finished (more was asked for); 2 never went out


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.sampled_from(["next", "next", "next", "batch", "commit", "close", "reopen", "release0", "release1"]),
        max_size=60,
    )
)
def test_model_no_gap_no_repeat_and_positions_between_handed_and_finished(ops: list[str]) -> None:
    q = StreamQueue(8)
    gate = DeliveryGate()
    infos = [make_info(q, 0), make_info(q, 1, offset=100)]
    for _ in range(0, 12, 4):
        for info in infos:
            q.offer(chunk(info, info.fetched_offset, 4))
            info.fetched_offset += 4
    it = ConsumerIterator(q, consumer_timeout_ms=0, gate=gate)
    handed: dict[int, list[int]] = {0: [], 1: []}
    finished_all = False  # the last thing handed out was finished (more asked for, or commit)
    last: int | None = None
    in_flight_from = -1  # first offset of the last message or batch handed out
    by_next = False  # ... and it came from the message iterator (not next_batch)
    stopped = False  # a close or a release came after that hand-out
    for op in ops:
        if op in ("next", "batch"):
            try:
                got = [next(iter(it))] if op == "next" else list(it.next_batch())
            except (ConsumerTimeout, StopIteration):
                if last is not None:
                    finished_all = True
                continue
            for m in got:
                handed[m.partition()].append(m.offset())
            last, in_flight_from, by_next = got[-1].partition(), got[0].offset(), op == "next"
            finished_all = stopped = False
        elif op == "commit":
            it.mark_consumed()
            # A stopped chunk may have pulled a message it did not hand out; a commit in that
            # instant cannot tell, so it leaves the one in flight for re-delivery (at-least-once).
            finished_all = finished_all or not (stopped and by_next)
        elif op == "close":
            stopped = True
            gate.close()
        elif op == "reopen":
            gate.reopen()
        else:
            stopped = stopped or int(op[-1]) == last
            infos[int(op[-1])].active = False
        for p, info in enumerate(infos):
            offsets = handed[p]
            base = info.committed_offset
            assert offsets == list(range(base, base + len(offsets))), f"partition {p}: gap or repeat"
            if not offsets:
                assert info.consumed_offset == base
                continue
            high = offsets[-1]
            if p == last and not finished_all:
                assert info.consumed_offset == in_flight_from  # still being processed
            else:
                assert info.consumed_offset == high + 1


def test_a_lapse_nobody_reported_stops_delivery_at_the_next_slice() -> None:
    # A frozen process waking up: the lease ran out while no thread could look. The iterating
    # thread gets there first; the slice it is in is all it may still hand out.
    gate, info, iterator = one_chunk_behind_a_gate(10 * SLICE)
    it = iter(iterator)
    assert [next(it).offset() for _ in range(10)] == list(range(10))
    gate.lease_until = gate.clock() - 1  # lapsed, and no renew()/guard call saw it
    got = []
    with pytest.raises(ConsumerTimeout, match="delivery paused"):
        for msg in it:
            got.append(msg.offset())
    assert got == list(range(10, SLICE))
    gate.renew(gate.clock() + 60)
    assert next(it).offset() == SLICE  # the same iterator goes on after the timeout, from where it stopped


def test_a_held_iterator_survives_timeouts_and_interrupts() -> None:
    class Interrupting(StreamQueue):
        interrupt = True

        def take(self, timeout):  # type: ignore[no-untyped-def]
            if self.interrupt:
                self.interrupt = False
                raise KeyboardInterrupt
            return super().take(timeout)

    q = Interrupting(2)
    info = make_info(q)
    iterator = ConsumerIterator(q, consumer_timeout_ms=10)
    with pytest.raises(KeyboardInterrupt):
        next(iterator)
    it = iter(iterator)  # a fresh chain after the interrupt
    with pytest.raises(ConsumerTimeout):
        next(it)
    q.offer(chunk(info, 0, 3))
    assert [next(it).offset() for _ in range(3)] == [0, 1, 2]  # the same object, after a timeout


def test_a_chunk_looks_at_the_gate_once_per_slice_and_copies_nothing_per_slice() -> None:
    class CountingGate(DeliveryGate):
        looks = 0

        def usable(self) -> bool:
            CountingGate.looks += 1
            return super().usable()

    q = StreamQueue(2)
    gate = CountingGate()
    info = make_info(q)
    q.offer(chunk(info, 0, 3 * SLICE + 5))
    it = iter(ConsumerIterator(q, consumer_timeout_ms=10, gate=gate))
    first = [next(it).offset() for _ in range(SLICE + 1)]
    assert first == list(range(SLICE + 1))
    looks_after_two_slices_started = CountingGate.looks
    rest = [next(it).offset() for _ in range(2 * SLICE + 4)]
    assert rest == list(range(SLICE + 1, 3 * SLICE + 5))
    # _next_messages looks once before the chunk; then one look per slice (4 slices: 128, 128, 128, 5)
    assert CountingGate.looks - looks_after_two_slices_started == 2
    assert looks_after_two_slices_started <= 3


@pytest.mark.parametrize("look", [2, 3])  # look 1: before the chunk; 2: its first slice; 3: its second
def test_a_commit_while_a_slice_looks_at_the_gate_counts_only_what_was_handed_out(look: int) -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 2 * SLICE))
    seen: dict[str, int] = {"looks": 0}
    got: list[int] = []

    class CommitWhileLooking(DeliveryGate):
        def usable(self) -> bool:
            seen["looks"] += 1
            if seen["looks"] == look:
                iterator.mark_consumed()  # a commit_offsets() from another thread, right now
                seen["committed"] = info.consumed_offset
                self.open = False  # ... and the slice finds the gate closed
                return False
            return super().usable()

    gate = CommitWhileLooking()
    iterator = ConsumerIterator(q, consumer_timeout_ms=10, gate=gate)
    it = iter(iterator)
    with pytest.raises(ConsumerTimeout, match="delivery paused"):
        while True:
            got.append(next(it).offset())
    assert seen["committed"] == len(got)  # what was handed out, never the message being pulled
    gate.reopen()
    with pytest.raises(ConsumerTimeout):
        while True:
            got.append(next(it).offset())
    assert got == list(range(2 * SLICE))


@pytest.mark.parametrize("commit_in_handler", [False, True])
def test_an_interrupt_while_a_slice_looks_at_the_gate_loses_and_repeats_nothing(commit_in_handler: bool) -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 2 * SLICE + 10))
    looks = [0]

    class InterruptedLook(DeliveryGate):
        def usable(self) -> bool:
            looks[0] += 1
            if looks[0] == 3:  # the second slice's look
                raise KeyboardInterrupt
            return super().usable()

    iterator = ConsumerIterator(q, consumer_timeout_ms=10, gate=InterruptedLook())
    got: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        for msg in iterator:
            got.append(msg.offset())
    assert got == list(range(SLICE)) and info.consumed_offset == SLICE - 1
    if commit_in_handler:
        iterator.mark_consumed()
        assert info.consumed_offset == SLICE
    with pytest.raises(ConsumerTimeout):
        for msg in iterator:  # the same iterator goes on
            got.append(msg.offset())
    assert got == list(range(2 * SLICE + 10)) and info.consumed_offset == 2 * SLICE + 10  # asked for more: all finished


def test_a_slice_whose_gate_is_closed_ends_the_chunk_one_pull_past_the_last_message_handed_out() -> None:
    gate, info, iterator = one_chunk_behind_a_gate(2 * SLICE)
    it = iter(iterator)
    got = [next(it).offset() for _ in range(SLICE)]
    gate.open = False  # closed without an interrupt: only the next slice's look sees it
    assert info.consumed_offset == SLICE - 1  # the last one handed out is still being processed
    with pytest.raises(ConsumerTimeout, match="delivery paused"):
        got.append(next(it).offset())
    # The look pulled message SLICE and did not hand it out; asking for more finished SLICE - 1.
    assert got == list(range(SLICE)) and info.consumed_offset == SLICE
    iterator.mark_consumed()
    assert info.consumed_offset == SLICE
    gate.reopen()
    assert next(it).offset() == SLICE


def test_ending_the_gate_lets_iterators_through_but_vouches_for_no_lease() -> None:
    now = [100.0]
    gate = DeliveryGate(clock=lambda: now[0])
    gate.renew(105.0)
    gate.end()
    assert gate.usable() and gate.lease_holds()
    now[0] = 106.0
    assert gate.usable()  # iterators run to their end
    assert not gate.lease_holds()  # a final commit after a failure must not take the end for a lease
    gate.renew(200.0)
    assert not gate.lease_holds()  # ended: frozen
