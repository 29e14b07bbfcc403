"""Unit tests of zkconsumer.coordinator.assignment.Assignment: every transition, a stateful model check and a threaded smoke test."""

from __future__ import annotations

import itertools
import sys
import threading

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.coordinator.assignment import Assignment


def make_info(
    topic: str = "t", partition: int = 0, thread: str = "c-0", offset: int = 0, epoch: int | None = 1
) -> PartitionTopicInfo:
    return PartitionTopicInfo(topic, partition, thread, StreamQueue(2), offset, epoch)


# ---- reads on an empty assignment ------------------------------------------------------------------


def test_empty() -> None:
    a = Assignment()
    assert a.owned() == {} and a.owned_infos() == {} and a.positions() == {}
    assert a.releasing() == {} and a.committable() == [] and a.counts_by_topic() == {}
    assert a.inactive() == [] and len(a) == 0 and a.get(("t", 0)) is None
    assert a.generation == 0


# ---- install ---------------------------------------------------------------------------------------


def test_install_delivers_and_bumps_the_generation() -> None:
    a = Assignment()
    x, y = make_info("t", 0, "c-0", 5), make_info("u", 3, "c-1", -1)
    x.active = False  # install makes it deliverable whatever it was
    a.install([x, y])
    assert x.active and y.active
    assert a.owned() == {("t", 0): "c-0", ("u", 3): "c-1"}
    assert a.owned_infos() == {("t", 0): x, ("u", 3): y}
    assert a.get(("t", 0)) is x and len(a) == 2
    assert a.positions() == {("t", 0): 5, ("u", 3): -1}
    assert a.counts_by_topic() == {"t": 1, "u": 1}
    assert a.generation == 1


def test_install_takes_keys_out_of_releasing_and_orphans() -> None:
    a = Assignment()
    old = make_info("t", 0)
    a.install([old])
    a.begin_release([("t", 0)])
    a.adopt_orphans({("t", 1): "c-9"})
    new0, new1 = make_info("t", 0, "c-1"), make_info("t", 1, "c-1")
    a.install([new0, new1])
    assert a.releasing() == {}
    assert a.owned() == {("t", 0): "c-1", ("t", 1): "c-1"}
    assert a.committable() == [new0, new1]
    assert old.active is False


def test_install_over_an_owned_key_deactivates_the_replaced_record() -> None:
    a = Assignment()
    old, new = make_info("t", 0, epoch=1), make_info("t", 0, epoch=2)
    a.install([old])
    a.install([new])
    assert a.get(("t", 0)) is new
    assert old.active is False


# ---- begin_release / released ----------------------------------------------------------------------


def test_begin_release_stops_delivery_but_stays_committable() -> None:
    a = Assignment()
    x, y = make_info("t", 0, "c-0"), make_info("t", 1, "c-1")
    a.install([x, y])
    moved = a.begin_release([("t", 0), ("t", 7)])  # unknown keys are ignored
    assert moved == [x]
    assert x.active is False and y.active is True
    assert a.owned() == {("t", 1): "c-1"}
    assert a.releasing() == {("t", 0): "c-0"}
    assert a.committable() == [y, x]
    assert a.generation == 2
    assert a.begin_release([("t", 0)]) == []  # already releasing: nothing moves, no bump
    assert a.begin_release([]) == []
    assert a.generation == 2


def test_released_forgets_releasing_and_orphans_only() -> None:
    a = Assignment()
    x, y = make_info("t", 0), make_info("t", 1)
    a.install([x, y])
    a.begin_release([("t", 0)])
    a.adopt_orphans({("t", 2): "c-5"})
    gen = a.generation
    a.released([("t", 0), ("t", 2), ("t", 1), ("t", 9)])  # ("t", 1) is owned: untouched
    assert a.releasing() == {}
    assert a.owned() == {("t", 1): "c-0"} and y.active
    assert a.committable() == [y]
    assert a.generation == gen


# ---- adopt_orphans ---------------------------------------------------------------------------------


def test_adopt_orphans_skips_owned_and_releasing() -> None:
    a = Assignment()
    a.install([make_info("t", 0), make_info("t", 1, "c-1")])
    a.begin_release([("t", 1)])
    adopted = a.adopt_orphans({("t", 3): "c-3", ("t", 0): "c-x", ("t", 1): "c-x", ("s", 2): "c-2"})
    assert adopted == [("s", 2), ("t", 3)]
    assert a.releasing() == {("t", 1): "c-1", ("t", 3): "c-3", ("s", 2): "c-2"}
    assert a.owned() == {("t", 0): "c-0"}
    assert len(a.committable()) == 2  # orphans have no records
    assert a.adopt_orphans({}) == []


# ---- stop_delivering / fence_topic / inactive ------------------------------------------------------


def test_stop_delivering_keeps_ownership() -> None:
    a = Assignment()
    x, y = make_info("t", 0), make_info("t", 1)
    a.install([x, y])
    gen = a.generation
    a.stop_delivering([("t", 0), ("t", 5)])
    assert x.active is False and y.active is True
    assert set(a.owned()) == {("t", 0), ("t", 1)}
    assert a.inactive() == [("t", 0)]
    assert a.generation == gen


def test_fence_topic_stops_other_incarnations_only() -> None:
    a = Assignment()
    same = make_info("t", 0, epoch=5)
    older = make_info("t", 1, epoch=4)
    unknown = make_info("t", 2, epoch=None)
    other_topic = make_info("u", 0, epoch=4)
    a.install([same, older, unknown, other_topic])
    assert a.fence_topic("t", 5) == [("t", 1)]
    assert (same.active, older.active, unknown.active, other_topic.active) == (True, False, True, True)
    assert a.fence_topic("t", 5) == []  # already fenced: not reported again
    assert a.fence_topic("t", None) == [("t", 0)]  # the topic node is gone: every known incarnation stops
    assert unknown.active is True  # epoch unknown: never fenced
    assert a.inactive() == [("t", 0), ("t", 1)]
    assert set(a.owned()) == {("t", 0), ("t", 1), ("t", 2), ("u", 0)}


def test_fence_topic_ignores_releasing_records() -> None:
    a = Assignment()
    x = make_info("t", 0, epoch=1)
    a.install([x])
    a.begin_release([("t", 0)])
    assert a.fence_topic("t", 2) == []


def test_inactive_is_sorted() -> None:
    a = Assignment()
    a.install([make_info("t", p) for p in (3, 1, 2)])
    a.stop_delivering([("t", 3), ("t", 1)])
    assert a.inactive() == [("t", 1), ("t", 3)]


# ---- drop / lose_all -------------------------------------------------------------------------------


def test_drop_forgets_owned_without_scheduling_a_delete() -> None:
    a = Assignment()
    x, y = make_info("t", 0), make_info("t", 1)
    a.install([x, y])
    assert a.drop([("t", 0), ("t", 8)]) == [x]
    assert x.active is False
    assert a.owned() == {("t", 1): "c-0"} and a.releasing() == {}
    assert a.generation == 2
    assert a.drop([("t", 0)]) == []
    assert a.generation == 2


def test_lose_all_empties_everything() -> None:
    a = Assignment()
    x, y = make_info("t", 0), make_info("t", 1)
    a.install([x, y])
    a.begin_release([("t", 1)])
    a.adopt_orphans({("t", 2): "c-2"})
    lost = a.lose_all()
    assert lost == [x, y]
    assert not x.active and not y.active
    assert a.owned() == {} and a.releasing() == {} and a.committable() == [] and a.positions() == {}
    assert a.generation == 3  # install, begin_release, lose_all (x was owned)
    assert a.lose_all() == []
    assert a.generation == 3  # nothing owned: unchanged


def test_lose_all_with_only_releasing_does_not_bump() -> None:
    a = Assignment()
    x = make_info("t", 0)
    a.install([x])
    a.begin_release([("t", 0)])
    gen = a.generation
    assert a.lose_all() == [x]
    assert a.generation == gen and a.releasing() == {}


# ---- record_positions / committable / positions / counts -------------------------------------------


def test_record_positions_updates_owned_and_releasing_only() -> None:
    a = Assignment()
    x, y = make_info("t", 0, offset=3), make_info("t", 1, offset=4)
    a.install([x, y])
    a.begin_release([("t", 1)])
    updated = a.record_positions({("t", 0): 10, ("t", 1): 20, ("t", 2): 30})
    assert updated == [x, y]
    assert (x.consumed_offset, y.consumed_offset) == (10, 20)
    assert (x.fetched_offset, x.committed_offset) == (3, 3)  # only the consumed position moves
    assert a.record_positions({("t", 0): -1}) == []  # negative: nothing known, ignored
    assert a.positions() == {("t", 0): 10}
    assert a.record_positions({("t", 0): 0}) == [x] and x.consumed_offset == 0


def test_counts_by_topic_counts_owned_only() -> None:
    a = Assignment()
    a.install([make_info("t", 0), make_info("t", 1), make_info("u", 0)])
    a.begin_release([("u", 0)])
    assert a.counts_by_topic() == {"t": 2}


def test_reads_are_snapshots() -> None:
    a = Assignment()
    a.install([make_info("t", 0)])
    owned, infos, pending, records = a.owned(), a.owned_infos(), a.releasing(), a.committable()
    owned.clear()
    infos.clear()
    pending[("x", 1)] = "c"
    records.clear()
    assert a.owned() == {("t", 0): "c-0"} and len(a.owned_infos()) == 1
    assert a.releasing() == {} and len(a.committable()) == 1


# ---- stateful model --------------------------------------------------------------------------------

TOPICS = ["a", "b"]
ALL_KEYS = [(t, p) for t in TOPICS for p in range(3)]
keys_st = st.lists(st.sampled_from(ALL_KEYS), max_size=4)
epochs = st.sampled_from([None, 1, 2])


class AssignmentMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.a = Assignment()
        self.owned: dict[tuple[str, int], PartitionTopicInfo] = {}
        self.releasing: dict[tuple[str, int], PartitionTopicInfo] = {}
        self.orphans: dict[tuple[str, int], str] = {}
        self.stopped: set[int] = set()  # id() of owned records fenced or stopped
        self.records: list[PartitionTopicInfo] = []
        self.offsets: dict[int, int] = {}
        self.generation = 0
        self.serial = itertools.count()

    def _owned_changed(self, before: dict) -> None:
        changed = before.keys() != self.owned.keys() or any(self.owned[k] is not v for k, v in before.items())
        if changed:
            assert self.a.generation > self.generation

    @rule(keys=keys_st, epoch=epochs, offset=st.integers(-1, 50))
    def install(self, keys: list, epoch: int | None, offset: int) -> None:
        before = dict(self.owned)
        fresh = [
            make_info(t, p, f"c-{next(self.serial)}", offset, epoch)
            for t, p in dict.fromkeys(keys)
            if (t, p) not in self.owned
        ]
        self.a.install(fresh)
        for info in fresh:
            self.releasing.pop(info.key, None)
            self.orphans.pop(info.key, None)
            self.owned[info.key] = info
            self.records.append(info)
            self.offsets[id(info)] = offset
        assert self.a.generation > self.generation
        self._owned_changed(before)

    @rule(keys=keys_st)
    def begin_release(self, keys: list) -> None:
        before = dict(self.owned)
        moved = self.a.begin_release(keys)
        expected = []
        for k in keys:
            if k in self.owned:
                info = self.owned.pop(k)
                self.stopped.discard(id(info))
                self.releasing[k] = info
                expected.append(info)
        assert [id(i) for i in moved] == [id(i) for i in expected]
        self._owned_changed(before)

    @rule(keys=keys_st)
    def released(self, keys: list) -> None:
        self.a.released(keys)
        for k in keys:
            self.releasing.pop(k, None)
            self.orphans.pop(k, None)

    @rule(nodes=st.dictionaries(st.sampled_from(ALL_KEYS), st.sampled_from(["c-x", "c-y"]), max_size=3))
    def adopt_orphans(self, nodes: dict) -> None:
        adopted = self.a.adopt_orphans(nodes)
        fresh = {k: v for k, v in nodes.items() if k not in self.owned and k not in self.releasing}
        self.orphans.update(fresh)
        assert adopted == sorted(fresh)
        assert not set(adopted) & set(self.a.owned())

    @rule(keys=keys_st)
    def stop_delivering(self, keys: list) -> None:
        self.a.stop_delivering(keys)
        for k in keys:
            if k in self.owned:
                self.stopped.add(id(self.owned[k]))

    @rule(topic=st.sampled_from(TOPICS), epoch=epochs)
    def fence_topic(self, topic: str, epoch: int | None) -> None:
        fenced = self.a.fence_topic(topic, epoch)
        expected = [
            k
            for k, i in self.owned.items()
            if k[0] == topic and i.epoch is not None and i.epoch != epoch and id(i) not in self.stopped
        ]
        assert sorted(fenced) == sorted(expected)
        for k in expected:
            self.stopped.add(id(self.owned[k]))

    @rule(keys=keys_st)
    def drop(self, keys: list) -> None:
        before = dict(self.owned)
        dropped = self.a.drop(keys)
        expected = [self.owned.pop(k) for k in keys if k in self.owned]
        assert [id(i) for i in dropped] == [id(i) for i in expected]
        self._owned_changed(before)

    @rule()
    def lose_all(self) -> None:
        before = dict(self.owned)
        lost = self.a.lose_all()
        assert {id(i) for i in lost} == {id(i) for i in [*self.owned.values(), *self.releasing.values()]}
        assert all(not i.active for i in lost)
        self.owned, self.releasing, self.orphans = {}, {}, {}
        self.stopped.clear()
        assert self.a.owned() == {} and self.a.releasing() == {} and self.a.committable() == []
        assert self.a.positions() == {} and len(self.a) == 0 and self.a.inactive() == []
        self._owned_changed(before)

    @rule(positions=st.dictionaries(st.sampled_from(ALL_KEYS), st.integers(-3, 100), max_size=4))
    def record_positions(self, positions: dict) -> None:
        updated = self.a.record_positions(positions)
        expected = []
        for k, off in positions.items():
            info = self.owned.get(k) or self.releasing.get(k)
            if info is not None and off >= 0:
                self.offsets[id(info)] = off
                expected.append(info)
        assert [id(i) for i in updated] == [id(i) for i in expected]

    # ---- invariants, checked after every step ----
    @invariant()
    def never_owned_and_releasing(self) -> None:
        assert not set(self.a.owned()) & set(self.a.releasing())

    @invariant()
    def owned_matches_model(self) -> None:
        assert self.a.owned() == {k: i.thread_id for k, i in self.owned.items()}
        assert {k: id(i) for k, i in self.a.owned_infos().items()} == {k: id(i) for k, i in self.owned.items()}
        assert len(self.a) == len(self.owned)
        for k in ALL_KEYS:
            assert self.a.get(k) is self.owned.get(k)

    @invariant()
    def active_exactly_for_owned_and_not_stopped(self) -> None:
        for info in self.records:
            should = self.owned.get(info.key) is info and id(info) not in self.stopped
            assert info.active is should, info
        assert self.a.inactive() == sorted(k for k, i in self.owned.items() if id(i) in self.stopped)

    @invariant()
    def committable_is_owned_plus_releasing(self) -> None:
        got = [id(i) for i in self.a.committable()]
        assert len(got) == len(set(got))
        assert set(got) == {id(i) for i in [*self.owned.values(), *self.releasing.values()]}

    @invariant()
    def releasing_covers_records_and_orphans(self) -> None:
        pending = self.a.releasing()
        assert set(pending) >= set(self.releasing)
        assert set(pending) == set(self.releasing) | set(self.orphans)
        assert not set(self.orphans) & set(self.owned)
        for k, i in self.releasing.items():
            assert pending[k] == i.thread_id

    @invariant()
    def positions_and_counts(self) -> None:
        assert self.a.positions() == {k: self.offsets[id(i)] for k, i in self.owned.items()}
        counts: dict[str, int] = {}
        for t, _p in self.owned:
            counts[t] = counts.get(t, 0) + 1
        assert self.a.counts_by_topic() == counts

    @invariant()
    def generation_never_decreases(self) -> None:
        assert self.a.generation >= self.generation
        self.generation = self.a.generation


AssignmentMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
TestAssignmentMachine = AssignmentMachine.TestCase


# ---- threads ---------------------------------------------------------------------------------------


def test_concurrent_readers_never_see_a_key_owned_and_releasing() -> None:
    a = Assignment()
    keys = [("t", p) for p in range(8)]
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0] * 4

    def reader(n: int) -> None:
        try:
            while not stop.is_set():
                owned = a.owned()
                positions = a.positions()
                records = a.committable()  # one snapshot of owned + releasing
                seen = [i.key for i in records]
                assert len(seen) == len(set(seen)), seen
                assert set(owned) <= set(keys) and set(positions) <= set(keys)
                assert all(isinstance(v, int) for v in positions.values())
                a.releasing(), a.counts_by_topic(), a.inactive(), len(a)
                reads[n] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for round_ in range(1000):
                infos = [make_info("t", p, f"c-{round_ % 3}", round_) for p, _ in enumerate(keys)]
                a.install(infos)
                a.record_positions({k: round_ + 1 for k in keys[:4]})
                a.begin_release(keys[round_ % 2 :: 2])
                a.released(keys)
                a.begin_release(keys)
                a.released(keys)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        readers = [threading.Thread(target=reader, args=(n,), daemon=True) for n in range(4)]
        for t in readers:
            t.start()
        w = threading.Thread(target=writer, daemon=True)
        w.start()
        w.join(120)
        stop.set()
        for t in readers:
            t.join(30)
    finally:
        sys.setswitchinterval(old_interval)
    assert not w.is_alive() and not any(t.is_alive() for t in readers)
    assert errors == []
    assert all(reads)
    assert a.owned() == {} and a.releasing() == {} and a.generation >= 1000
