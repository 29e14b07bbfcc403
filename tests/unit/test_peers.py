"""Tests for zkconsumer.coordinator.peers: unusable peer registrations are ignored, never fatal, and reported once."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.peers import (
    IgnoredPeerReporter,
    OwnRegistrationError,
    PeerView,
    evaluate_peers,
    registration_problem,
)
from zkconsumer.coordinator.rebalance_plan import GroupView, member_threads
from zkconsumer.coordinator.subscription import MAX_STREAMS
from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper.znodes import Registration, member_path

V1_1 = Compat.parse("1.1")
GROUP, ME = "g", "g_me"
TOPICS = ("orders", "payments", "metrics.cpu", "__consumer_offsets", "zeta")


def reg(pattern: str, **counts: int) -> Registration:
    return Registration(tuple(counts.items()), pattern, "1")


def reg_pairs(pattern: str, *pairs: tuple[str, int]) -> Registration:
    return Registration(tuple(pairs), pattern, "1")


GOOD = {
    ME: reg("static", orders=2),
    "g_scala": reg_pairs("white_list", ("orders|payments", 1)),
    "g_other": reg_pairs("black_list", ("orders", 3)),
    "g_unknown_pattern": reg("wildcard", orders=1),  # any other pattern string is static, as in Scala
    "g_empty_wildcard": reg_pairs("white_list"),  # empty map: Scala's static, no threads
}


def evaluate(
    registrations: dict[str, Registration],
    unreadable: dict[str, Exception] | None = None,
    topics: tuple[str, ...] = TOPICS,
    own_id: str = ME,
) -> PeerView:
    return evaluate_peers(
        registrations, unreadable or {}, topics, own_id=own_id, group_id=GROUP, exclude_internal=True, compat=V1_1
    )


def reference(
    registrations: dict[str, Registration], topics: tuple[str, ...] = TOPICS
) -> dict[str, dict[str, list[str]]]:
    return member_threads(GroupView(registrations, topics), exclude_internal=True, compat=V1_1)


BAD = [  # (registration, fragments the reason must contain)
    (reg("static", orders=0), ["stream count 0", "'orders'", f"1..{MAX_STREAMS}"]),
    (reg("static", orders=-1), ["stream count -1", "'orders'"]),
    (reg("static", payments=1, orders=MAX_STREAMS + 1), [f"stream count {MAX_STREAMS + 1}", "'orders'"]),
    (reg_pairs("static", ("", 1)), ["illegal topic name ''"]),
    (reg_pairs("static", ("a/b", 1)), ["illegal topic name 'a/b'"]),
    (reg_pairs("static", ("..", 1)), ["illegal topic name '..'"]),
    (reg_pairs("nonsense", ("orders.*", 1)), ["illegal topic name 'orders.*'", "'nonsense' is read as static"]),
    (reg_pairs("white_list", ("orders", 0)), ["stream count 0", "white_list regex 'orders'"]),
    (reg_pairs("black_list", ("zzz", -5)), ["stream count -5", "black_list regex 'zzz'"]),
    (reg_pairs("white_list", ("[a-z&&[^x]].*", 1)), ["regex '[a-z&&[^x]].*' cannot be evaluated here", "&&"]),
    (reg_pairs("white_list", ("\\p{javaLowerCase}+", 1)), ["cannot be evaluated here", "javaLower"]),
    (reg_pairs("black_list", ("(orders", 1)), ["black_list regex '(orders' is invalid", "missing )"]),
    (reg_pairs("white_list", ("*", 1)), ["regex '*' is invalid", "nothing to repeat"]),
    (reg_pairs("white_list", ("a{99999999999}", 1)), ["cannot be evaluated here", "too large"]),
    (reg_pairs("white_list", ("(" * 3000 + ")" * 3000, 1)), ["cannot be evaluated here", "chars)"]),
]


@pytest.mark.parametrize(("bad", "fragments"), BAD)
def test_bad_peer_is_ignored_and_the_rest_is_unchanged(bad: Registration, fragments: list[str]) -> None:
    view = evaluate({**GOOD, "g_bad": bad})
    assert set(view.ignored) == {"g_bad"}
    reason = view.ignored["g_bad"]
    assert "\n" not in reason and len(reason) < 600
    for fragment in fragments:
        assert fragment in reason
    assert view.threads == reference(GOOD)
    assert list(view.threads) == list(GOOD)  # registration order, as member_threads gives it


def test_unreadable_peer_is_ignored_with_the_decode_error() -> None:
    path = member_path(GROUP, "g_junk")
    with pytest.raises(ZkDataError) as caught:
        Registration.decode(b'{"pattern": 1, "subscription": {}}', path)
    view = evaluate(GOOD, {"g_junk": caught.value})
    assert view.ignored == {"g_junk": f"unreadable registration: {path}: pattern must be a string, got 1"}
    assert view.threads == reference(GOOD)


def test_what_scala_reads_is_kept() -> None:
    multi = reg_pairs("white_list", ("orders", 1), ("x", 0))  # only the map head is read, as Scala does
    assert registration_problem(multi) is None
    biggest = reg("static", orders=MAX_STREAMS)
    view = evaluate({**GOOD, "g_multi": multi, "g_big": biggest})
    assert view.ignored == {}
    assert view.threads == reference({**GOOD, "g_multi": multi, "g_big": biggest})
    assert view.threads["g_unknown_pattern"] == {"orders": ["g_unknown_pattern-0"]}
    assert view.threads["g_empty_wildcard"] == {}


def test_several_bad_peers_each_get_a_reason() -> None:
    bads = {f"g_bad{i}": bad for i, (bad, _) in enumerate(BAD[:5])}
    view = evaluate({**bads, **GOOD}, {"g_junk": ZkDataError("/p", "not valid JSON")})
    assert list(view.ignored) == [*bads, "g_junk"]
    assert view.threads == reference(GOOD)


@pytest.mark.parametrize(
    ("registrations", "unreadable", "needle"),
    [
        ({"g_x": reg("static", orders=1)}, {}, "is missing"),
        ({ME: reg("static", orders=0)}, {}, "stream count 0"),
        ({ME: reg_pairs("white_list", ("[a-z&&[^x]].*", 1))}, {}, "cannot be evaluated here"),
        ({}, {ME: ZkDataError(member_path(GROUP, ME), "not valid JSON")}, "unreadable registration"),
    ],
)
def test_own_registration_bad_or_missing_raises_naming_its_node(
    registrations: dict[str, Registration], unreadable: dict[str, Exception], needle: str
) -> None:
    with pytest.raises(OwnRegistrationError) as caught:
        evaluate({**registrations, "g_scala": GOOD["g_scala"]}, unreadable)
    assert isinstance(caught.value, ValueError)
    assert caught.value.path == "/consumers/g/ids/g_me"
    assert str(caught.value).startswith("/consumers/g/ids/g_me: ") and needle in str(caught.value)


def test_a_member_both_readable_and_unreadable_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="both readable and unreadable"):
        evaluate(GOOD, {ME: ZkDataError("/p", "x")})


# ---------------------------------------------------------------- property: never raises, no behaviour change

REGEXES = [
    "orders",
    "orders|payments",
    ".*",
    "[a-z&&[^x]].*",
    "\\p{javaLowerCase}+",
    "\\p{Lower}+",
    "(",
    "*",
    "a{2,1}",
    "'metrics.*'",
    " a , b ",
    "[",
    "\\",
    "(?<n>o)rders",
    "\\Qa.b\\E",
    "zeta$",
    "a{99999999999}",
]
KEYS = st.one_of(st.sampled_from(REGEXES + list(TOPICS) + ["", "a/b", ".", "..", "é"]), st.text(max_size=12))
COUNTS = st.one_of(st.integers(1, 4), st.sampled_from([0, -1, -(2**31), MAX_STREAMS + 1, 2**31 - 1]))
PATTERNS = st.one_of(st.sampled_from(["static", "white_list", "black_list"]), st.text(max_size=10))
REGISTRATIONS = st.builds(
    lambda pairs, pattern: Registration(tuple(pairs.items()), pattern, "1"),
    st.dictionaries(KEYS, COUNTS, max_size=4),
    PATTERNS,
)
MEMBER_IDS = st.text(max_size=8).filter(lambda cid: cid != ME)
ALL_TOPICS = st.lists(st.one_of(st.sampled_from(TOPICS), st.text(max_size=6)), max_size=6).map(tuple)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(MEMBER_IDS, REGISTRATIONS, max_size=5),
    st.dictionaries(MEMBER_IDS, st.just(ZkDataError("/p", "not valid JSON")), max_size=2),
    ALL_TOPICS,
)
def test_peers_never_raise_and_valid_peers_read_as_before(
    peers: dict[str, Registration], unreadable: dict[str, Exception], topics: tuple[str, ...]
) -> None:
    unreadable = {cid: exc for cid, exc in unreadable.items() if cid not in peers}
    registrations = {ME: reg("static", orders=1), **peers}
    view = evaluate(registrations, unreadable, topics)
    members = set(registrations) | set(unreadable)
    assert set(view.threads) | set(view.ignored) == members
    assert not set(view.threads) & set(view.ignored)
    assert all(reason and "\n" not in reason for reason in view.ignored.values())
    for cid, threads in view.threads.items():
        assert reference({cid: registrations[cid]}, topics) == {cid: threads}


# ---------------------------------------------------------------- reporter


def test_reporter_warns_once_per_change_and_informs_when_cleared(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="zkconsumer.coordinator.peers")
    reporter = IgnoredPeerReporter()
    assert (reporter.report({}), reporter.count, caplog.records) == (False, 0, [])

    first = {"g_b": "stream count 0 for topic 'orders' (expected 1..100000)", "g_a": "unreadable registration: x"}
    assert reporter.report(first) is True and reporter.count == 2
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    message = caplog.records[0].getMessage()
    assert re.search(r"2 group member.*'g_a': unreadable registration: x; 'g_b': stream count 0", message)
    assert all(r.name == "zkconsumer.coordinator.peers" for r in caplog.records)

    assert reporter.report(dict(reversed(first.items()))) is False  # same set: nothing new to say
    assert reporter.report(first) is False and len(caplog.records) == 1

    changed = {**first, "g_a": "unreadable registration: y"}  # a new reason is a change too
    assert reporter.report(changed) is True and reporter.count == 2
    assert [r.levelname for r in caplog.records] == ["WARNING"] * 2 and "y" in caplog.records[1].getMessage()

    assert reporter.report({"g_b": first["g_b"]}) is True and reporter.count == 1
    assert "1 group member" in caplog.records[2].getMessage()

    assert reporter.report({}) is True and reporter.count == 0
    assert caplog.records[3].levelname == "INFO"
    assert reporter.report({}) is False and len(caplog.records) == 4
