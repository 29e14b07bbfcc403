"""Tests for zkconsumer.coordinator.assignors: reference examples, Java hash values, and group-wide properties."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.assignors import (
    AssignmentError,
    AssignmentInput,
    assign,
    assign_group,
    hash_ties,
    java_string_hashcode,
    owned_by,
    range_assign,
    roundrobin_assign,
    roundrobin_sort_key,
)


def _by_thread(decision):
    out: dict[str, set] = {}
    for tp, thread in decision.items():
        out.setdefault(thread, set()).add(tp)
    return out


# --- Java String.hashCode (values printed by a JDK 17 String.hashCode) ---------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 99162322),
        ("hello world", 1794106052),
        ("Hello World", -862545276),  # wraps negative
        ("polygenelubricants", -2147483648),  # Integer.MIN_VALUE
        ("abcdefghijklmnopqrstuvwxyz", 958031277),
        ("Aa", 2112),
        ("BB", 2112),
        ("\U0001f600", 1772899),  # non-BMP: surrogate pair D83D DE00
        ("a\U0001f600b", 57849694),
        ("\ud800", 55296),  # lone surrogate is a legal Java char
        ("\u00e9t\u00e9", 227742),
        ("[t,0]", 87540032),
        ("[t,9]", 87540311),
        ("[t,10]", -1581226645),
        ("[t,11]", -1581226614),
        ("t-0", 112919),
        ("t-9", 112928),
        ("t-10", 3500568),
        ("t-11", 3500569),
        ("orders-17", -390715890),
        ("[orders,17]", 458863179),
    ],
)
def test_java_string_hashcode(text, expected):
    assert java_string_hashcode(text) == expected


@given(st.text())
def test_hashcode_is_signed_int32(text):
    assert -(2**31) <= java_string_hashcode(text) < 2**31


def test_sort_key_formats():
    assert roundrobin_sort_key("t", 10, "[t,p]") == (-1581226645, "t", 10)
    assert roundrobin_sort_key("t", 10, "t-p") == (3500568, "t", 10)
    with pytest.raises(ValueError):
        roundrobin_sort_key("t", 0, "t:p")


# --- Worked examples (docs/design.md, "Assignment") -----------------------------------------------


def test_example_a_range_unequal_streams():
    a, b = "g_hostA-1500000000000-1a2b3c4d", "g_hostB-1500000000500-9f8e7d6c"
    inp = AssignmentInput({"orders": [f"{b}-0", f"{a}-1", f"{a}-0"]}, {"orders": [4, 3, 2, 1, 0]})
    assert _by_thread(range_assign(inp)) == {
        f"{a}-0": {("orders", 0), ("orders", 1)},
        f"{a}-1": {("orders", 2), ("orders", 3)},
        f"{b}-0": {("orders", 4)},
    }


def test_example_b_range_lexicographic_trap():
    inp = AssignmentInput({"t": [f"g_c-{i}" for i in range(12)]}, {"t": list(range(14))})
    got = {thread: sorted(p for _, p in tps) for thread, tps in _by_thread(range_assign(inp)).items()}
    order = sorted(f"g_c-{i}" for i in range(12))
    assert order[:5] == ["g_c-0", "g_c-1", "g_c-10", "g_c-11", "g_c-2"]
    assert [got[t] for t in order] == [[0, 1], [2, 3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13]]


_C = AssignmentInput({"t": ["g_c3-0", "g_c1-0", "g_c2-0"]}, {"t": list(range(12))})


def _partitions_of(decision):
    return {t: sorted(p for _, p in tps) for t, tps in _by_thread(decision).items()}


def test_example_c_roundrobin_old_format():
    assert _partitions_of(roundrobin_assign(_C, key_format="[t,p]")) == {
        "g_c1-0": [1, 4, 7, 10],
        "g_c2-0": [2, 5, 8, 11],
        "g_c3-0": [0, 3, 6, 9],
    }
    # identical subscriptions, so the <=0.10.1 mode gives the same answer
    assert roundrobin_assign(_C, key_format="[t,p]", require_identical=True) == roundrobin_assign(
        _C, key_format="[t,p]"
    )


def test_example_c_roundrobin_new_format():
    assert _partitions_of(roundrobin_assign(_C, key_format="t-p")) == {
        "g_c1-0": [0, 3, 6, 9],
        "g_c2-0": [1, 4, 7, 10],
        "g_c3-0": [2, 5, 8, 11],
    }


@pytest.mark.parametrize(
    ("version", "c1"),
    [("0.8.2", [1, 4, 7, 10]), ("0.11", [1, 4, 7, 10]), ("1.0.0", [0, 3, 6, 9]), ("1.1", [0, 3, 6, 9])],
)
def test_example_c_through_compat(version, c1):
    assert _partitions_of(assign("roundrobin", _C, Compat.parse(version)))["g_c1-0"] == c1


_D = AssignmentInput({"a": ["g_c2-0", "g_c1-0"], "b": ["g_c2-0"]}, {"a": [0, 1, 2], "b": [0, 1]})


@pytest.mark.parametrize("key_format", ["t-p", "[t,p]"])
def test_example_d_unequal_subscriptions(key_format):
    assert _by_thread(roundrobin_assign(_D, key_format=key_format)) == {
        "g_c1-0": {("a", 0), ("a", 2)},
        "g_c2-0": {("a", 1), ("b", 0), ("b", 1)},
    }


def test_example_d_fails_up_to_0_10_1():
    with pytest.raises(AssignmentError, match=r"'b'.*g_c1-0"):
        roundrobin_assign(_D, key_format="[t,p]", require_identical=True)
    with pytest.raises(AssignmentError):
        assign("roundrobin", _D, Compat.parse("0.10.1"))
    assert assign("roundrobin", _D, Compat.parse("0.10.2")) == roundrobin_assign(_D, key_format="[t,p]")


# --- Edge cases -----------------------------------------------------------------------------------


def test_strategy_dispatch():
    inp = AssignmentInput({"t": ["g_a-0", "g_b-0"]}, {"t": [0, 1, 2, 3]})
    assert assign("range", inp) == range_assign(inp)
    assert assign("Roundrobin", inp) == range_assign(inp)  # case-sensitive match, like Scala
    assert assign("roundrobin", inp) == roundrobin_assign(inp)
    assert assign("range", inp) != assign("roundrobin", inp)


def test_topics_without_consumers_or_partitions():
    inp = AssignmentInput(
        {"empty": ["g_a-0"], "nothreads": [], "missing": ["g_a-0"], "t": ["g_a-0"]},
        {"empty": [], "t": [0], "orphan": [0, 1]},
    )
    assert range_assign(inp) == {("t", 0): "g_a-0"}
    assert roundrobin_assign(inp, require_identical=True) == {("t", 0): "g_a-0"}
    assert roundrobin_assign(AssignmentInput({}, {"t": [0]})) == {}


def test_java_thread_order_beyond_bmp():
    # Java compares UTF-16 units: U+1F600 (D83D..) sorts before U+FFFF, unlike Python str order
    inp = AssignmentInput({"t": ["g_\uffff-0", "g_\U0001f600-0"]}, {"t": [0, 1]})
    assert range_assign(inp) == {("t", 0): "g_\U0001f600-0", ("t", 1): "g_\uffff-0"}


def test_owned_by_does_not_confuse_prefixes():
    threads = ["g_a-0", "g_a-10", "g_a-1-0", "g_a-1-12", "g_a"]
    decision = {("t", i): thread for i, thread in enumerate(threads)}
    assert owned_by(decision, "g_a") == {("t", 0): "g_a-0", ("t", 1): "g_a-10"}
    assert owned_by(decision, "g_a-1") == {("t", 2): "g_a-1-0", ("t", 3): "g_a-1-12"}
    assert owned_by(decision, "g") == {}


def test_hash_ties_across_topics():
    # "Aa" and "BB" share a hash, so every "Aa-p"/"BB-p" pair ties
    inp = AssignmentInput({"Aa": ["g_x-0"], "BB": ["g_x-0", "g_y-0"]}, {"Aa": [0, 1], "BB": [0, 1]})
    assert hash_ties(inp, "t-p") == [(("Aa", 0), ("BB", 0)), (("Aa", 1), ("BB", 1))]
    assert len(hash_ties(inp, "[t,p]")) == 2
    assert hash_ties(_C, "[t,p]") == [] and hash_ties(_D, "t-p") == []
    # ties resolve as ascending (topic, partition): Aa-0 -> x, BB-0 -> y, Aa-1 -> x, BB-1 -> y
    expected = {("Aa", 0): "g_x-0", ("BB", 0): "g_y-0", ("Aa", 1): "g_x-0", ("BB", 1): "g_y-0"}
    assert roundrobin_assign(inp) == expected


# --- Properties -------------------------------------------------------------------------------------

TOPICS = ["a", "b", "orders", "t", "Aa", "BB"]


@st.composite
def groups(draw, identical: bool = False):
    """A random group: members with per-topic stream counts, and topics with partition ids."""
    n_members = draw(st.integers(1, 5))
    names = st.sampled_from(["g_a", "g_a-1", "g_b", "g_host-1-ff", "g_z"])
    members = draw(st.lists(names, min_size=n_members, max_size=n_members, unique=True))
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    consumers: dict[str, list[str]] = {}
    if identical:
        streams = {m: draw(st.integers(1, 12)) for m in members}
        for topic in topics:
            consumers[topic] = [f"{m}-{i}" for m in members for i in range(streams[m])]
    else:
        for m in members:
            for topic in draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)):
                consumers.setdefault(topic, []).extend(f"{m}-{i}" for i in range(draw(st.integers(1, 12))))
    partitions = {t: draw(st.lists(st.integers(0, 60), unique=True, max_size=30)) for t in topics}
    return AssignmentInput(consumers, partitions)


def _shuffled(inp: AssignmentInput, rnd: random.Random) -> AssignmentInput:
    def shuffle_map(mapping):
        keys = list(mapping)
        rnd.shuffle(keys)
        return {k: rnd.sample(list(mapping[k]), len(mapping[k])) for k in keys}

    return AssignmentInput(shuffle_map(inp.consumers_for_topic), shuffle_map(inp.partitions_for_topic))


ALGORITHMS = {
    "range": range_assign,
    "rr-new": lambda i: roundrobin_assign(i, key_format="t-p"),
    "rr-old": lambda i: roundrobin_assign(i, key_format="[t,p]"),
}


@pytest.mark.parametrize("name", list(ALGORITHMS))
@given(inp=groups())
def test_every_partition_exactly_once_to_a_subscriber(name, inp):
    decision = ALGORITHMS[name](inp)
    expected = {(t, p) for t in inp.consumers_for_topic for p in inp.partitions_for_topic.get(t, ())}
    assert set(decision) == expected
    for (topic, _), thread in decision.items():
        assert thread in inp.consumers_for_topic[topic]


@pytest.mark.parametrize("name", list(ALGORITHMS))
@given(inp=groups(), rnd=st.randoms(use_true_random=False))
def test_every_member_computes_the_same_decision(name, inp, rnd):
    assert ALGORITHMS[name](inp) == ALGORITHMS[name](_shuffled(inp, rnd))


@given(inp=groups())
def test_owned_by_partitions_the_decision(inp):
    decision = roundrobin_assign(inp)
    members = {t.rsplit("-", 1)[0] for threads in inp.consumers_for_topic.values() for t in threads}
    shares = [owned_by(decision, m) for m in members]
    assert sum(len(s) for s in shares) == len(decision)
    assert {k: v for s in shares for k, v in s.items()} == decision


@given(inp=groups())
def test_range_balanced_per_topic(inp):
    decision = range_assign(inp)
    for topic, threads in inp.consumers_for_topic.items():
        counts = Counter({t: 0 for t in threads})
        counts.update(thread for (t, _), thread in decision.items() if t == topic)
        assert max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.parametrize("key_format", ["t-p", "[t,p]"])
@given(inp=groups(identical=True))
def test_roundrobin_balanced_with_identical_subscriptions(key_format, inp):
    decision = roundrobin_assign(inp, key_format=key_format, require_identical=True)
    assert decision == roundrobin_assign(inp, key_format=key_format)
    threads = {t for ts in inp.consumers_for_topic.values() for t in ts}
    counts = Counter({t: 0 for t in threads})
    counts.update(decision.values())
    assert max(counts.values()) - min(counts.values()) <= 1


def _scala_roundrobin(inp: AssignmentInput, key_format: str) -> dict:
    """Literal model of RoundRobinAssignor 0.10.2+: one shared cycle iterator, dropWhile(...).next."""
    subs = {t: set(ts) for t, ts in inp.consumers_for_topic.items() if ts}
    threads = itertools.cycle(sorted({t for ts in subs.values() for t in ts}))
    pairs = [(t, p) for t in sorted(subs) for p in sorted(inp.partitions_for_topic.get(t, ()))]
    text = "{0}-{1}" if key_format == "t-p" else "[{0},{1}]"
    pairs.sort(key=lambda tp: java_string_hashcode(text.format(*tp)))
    return {tp: next(th for th in threads if th in subs[tp[0]]) for tp in pairs}


@settings(max_examples=200)
@given(inp=groups(), key_format=st.sampled_from(["t-p", "[t,p]"]))
def test_roundrobin_matches_literal_model(inp, key_format):
    assert roundrobin_assign(inp, key_format=key_format) == _scala_roundrobin(inp, key_format)


def _scala_range(inp: AssignmentInput) -> dict:
    """Literal model of RangeAssignor: per topic, sorted threads, nPartsPerConsumer and the extra."""
    out = {}
    for topic in sorted(inp.consumers_for_topic):
        threads = sorted(set(inp.consumers_for_topic[topic]))
        parts = sorted(set(inp.partitions_for_topic.get(topic) or ()))
        if not threads:
            continue
        per, extra = divmod(len(parts), len(threads))
        for i, thread in enumerate(threads):
            start = per * i + min(i, extra)
            for p in parts[start : start + per + (1 if i + 1 <= extra else 0)]:
                out[(topic, p)] = thread
    return out


@given(inp=groups())
def test_range_matches_literal_model(inp):
    assert range_assign(inp) == _scala_range(inp)


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
@given(inp=groups())
def test_a_group_assignment_answers_as_the_plain_decision(strategy, inp):
    plain = assign(strategy, inp)
    group = assign_group(strategy, inp)
    assert len(group) == len(plain) and set(group) == set(plain) and dict(group) == plain
    assert group.by_topic() == {
        t: dict(sorted((p, th) for (tt, p), th in plain.items() if tt == t)) for t in sorted({t for t, _ in plain})
    }
    for thread in set(plain.values()):
        assert group.share(thread) == {k: v for k, v in plain.items() if v == thread}
    assert set(group.threads()) == set(plain.values())
    members = {t.rsplit("-", 1)[0] for threads in inp.consumers_for_topic.values() for t in threads}
    for member in members:
        assert owned_by(group, member) == dict(sorted(owned_by(plain, member).items()))
    for missing in [("no such topic", 0), *((t, 61) for t in inp.partitions_for_topic)]:
        assert missing not in group and group.get(missing) is None
        with pytest.raises(KeyError):
            group[missing]
