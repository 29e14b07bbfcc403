"""The live switch's member-side target (coordinator/switch_follow.switch_target): ZooKeeper's share up to joining, the brokers' from handover."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.coordinator.switch_follow import switch_target
from zkconsumer.migration import SWITCH_STEPS

Key = tuple[str, int]
Share = dict[Key, str]
KEYS = [(t, p) for t in ("t", "u") for p in range(4)]
THREADS = {"t": ["g_a-0", "g_a-1"], "u": ["g_a-0"]}
keys = st.frozensets(st.sampled_from(KEYS))
shares = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["g_a-0", "g_a-1"]))


@given(st.sampled_from(SWITCH_STEPS), shares, st.none() | keys, shares)
def test_the_target_is_zookeepers_share_until_handover_then_exactly_what_the_brokers_assign(
    step: str, zookeeper: Share, brokers: frozenset[Key] | None, owned: Share
) -> None:
    target = switch_target(step, zookeeper, brokers, THREADS, owned)
    if step in ("zookeeper", "joining"):
        assert target == zookeeper
    elif brokers is None:
        assert target == owned  # no word from the brokers yet: nothing moves
    else:
        assert set(target) == set(brokers)
        for key, thread in target.items():
            assert thread in THREADS[key[0]]
            if key in owned and owned[key] in THREADS[key[0]]:
                assert thread == owned[key]  # a partition we keep stays on its stream


def test_a_topic_we_do_not_subscribe_to_is_not_claimed_even_if_the_brokers_assign_it() -> None:
    assert switch_target("handover", {}, frozenset({("v", 0), ("t", 1)}), THREADS, {}) == {("t", 1): "g_a-0"}
