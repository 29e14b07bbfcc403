"""The exporter's window kept as runs judges as admin.group_lag does over the same samples, and gives them back whole."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.admin import NOT_JUDGED, Judged, Ownership, Sample, Seen, group_status, judge_runs
from zkconsumer.admin.group_lag import judge_group, partition_facts
from zkconsumer.exporter.sampling import GroupSample
from zkconsumer.exporter.window import GroupWindow

KEYS = [("t", 0), ("t", 1), ("u", 0)]
OWNERS = [(None, Ownership.UNOWNED), ("g_a-0", Ownership.OWNED), ("gone-0", Ownership.OWNER_GONE)]


@st.composite
def seens(draw: st.DrawFn, at_ms: int) -> Seen:
    """A partition as one sample saw it, from a small domain so that samples repeat and change."""
    write = draw(st.sampled_from([None, (10, 1_000), (11, 3_000), (12, 4_000)]))
    committed = None if write is None else draw(st.sampled_from([3, 5, 8]))
    owner, ownership = draw(st.sampled_from(OWNERS))
    log_end = draw(st.sampled_from([None, 5, 8, 9]))
    return Seen(at_ms, committed, write, log_end, owner, ownership)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[GroupSample], int]:
    """Samples a second apart, each partition in some of them, and the window's size."""
    count = draw(st.integers(1, 12))
    samples: list[GroupSample] = []
    for i in range(count):
        at_ms = 10_000 + 1_000 * i + draw(st.integers(0, 300))
        present = draw(st.sets(st.sampled_from(KEYS)))
        before = samples[-1].sample.partitions if samples else {}
        partitions = {
            key: replace(before[key], at_ms=at_ms) if key in before and draw(st.booleans()) else draw(seens(at_ms))
            for key in sorted(present)
        }  # often as the sample before saw it: runs longer than one sample
        members = draw(st.sampled_from([(), ("g_a",), ("g_a", "g_b")]))
        samples.append(GroupSample(Sample(at_ms, partitions, members), {m: "scala" for m in members}, None, ()))
    return samples, draw(st.integers(1, 6))


@settings(max_examples=400)
@given(histories())
def test_the_runs_judge_as_the_samples_do(history: tuple[list[GroupSample], int]) -> None:
    samples, size = history
    window = GroupWindow(size)
    previous: Judged = NOT_JUDGED
    for count, taken in enumerate(samples, 1):
        window.append(*_split(taken))
        kept = [s.sample for s in samples[max(0, count - size) : count]]
        snapshot = window.snapshot()
        assert [s.sample for s in snapshot.samples()] == kept
        last = kept[-1]
        facts = {key: snapshot.facts(key) for key in last.partitions}
        for key, got in facts.items():
            expected = partition_facts([s.partitions[key] for s in kept if key in s.partitions])
            assert replace(got, log_ends=()) == replace(expected, log_ends=())
            assert set(got.log_ends) <= set(expected.log_ends)
        verdict = judge_group(facts, len(kept) > 1, last.members, last.at_ms + 7_000)
        later = replace(last, at_ms=last.at_ms + 7_000)  # the time rules (STOP, lag seconds) at a later now
        assert verdict == group_status([*kept[:-1], later])
        again, previous = judge_runs(snapshot.runs, snapshot.times, snapshot.first, last.members, previous)
        assert again == group_status(kept)  # judged again only where runs or time could change it
        assert len(snapshot.runs) <= len({k for s in kept for k in s.partitions})


def test_a_partition_seen_the_same_holds_one_run_however_many_samples() -> None:
    seen = Seen(0, 5, (10, 1_000), 9, None, Ownership.UNOWNED)
    window = GroupWindow(5)
    for i in range(20):
        window.append(*_split(GroupSample(Sample(i, {("t", 0): replace(seen, at_ms=i)}, ()), {}, None, ())))
    snapshot = window.snapshot()
    assert len(snapshot.runs[("t", 0)]) == 1 and snapshot.times == (15, 16, 17, 18, 19)
    assert snapshot.facts(("t", 0)).log_ends == ((15, 9), (19, 9))


def _split(taken: GroupSample) -> tuple:  # type: ignore[type-arg]
    meta = GroupWindow.of([taken]).snapshot().last_meta
    return meta, {
        key: (s.committed, s.written, s.log_end, s.owner, s.ownership) for key, s in taken.sample.partitions.items()
    }


@settings(max_examples=60)
@given(histories(), histories(), st.data())
def test_a_replaced_newest_sample_leaves_the_window_it_would_have_been(
    history: tuple[list[GroupSample], int], decoys: tuple[list[GroupSample], int], data: st.DataObject
) -> None:
    """A refresh between ticks (a commit's watch fired) puts its sample in place of the newest:
    the window is as if the sample it replaced had never been taken, however many came between."""
    samples, size = history
    plain, replaced = GroupWindow(size), GroupWindow(size)
    previous: Judged = NOT_JUDGED
    for taken in samples:
        plain.append(*_split(taken))
        between = data.draw(st.lists(st.sampled_from(decoys[0]), max_size=3))
        if between:
            replaced.append(*_split(between[0]))
            for decoy in between[1:]:
                replaced.replace_newest(*_split(decoy))
            snapshot = replaced.snapshot()
            _, previous = judge_runs(snapshot.runs, snapshot.times, snapshot.first, (), previous)
            replaced.replace_newest(*_split(taken))
        else:
            replaced.append(*_split(taken))
        want, got = plain.snapshot(), replaced.snapshot()
        assert (got.first, got.metas, got.runs, got.times) == (want.first, want.metas, want.runs, want.times)
        again, previous = judge_runs(got.runs, got.times, got.first, got.last_meta.members, previous)
        assert again == judge_runs(want.runs, want.times, want.first, want.last_meta.members)[0]
