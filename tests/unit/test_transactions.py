"""transactions.batches: claims split under a byte budget, in order, nothing lost or repeated."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.zookeeper import transactions, znodes


@given(st.lists(st.integers(min_value=1, max_value=500)), st.integers(min_value=1, max_value=2000))
def test_batches_keep_order_and_stay_under_the_budget(sizes: list[int], budget: int) -> None:
    groups = list(transactions.batches(enumerate(sizes), budget))
    assert [k for group in groups for k in group] == list(range(len(sizes)))
    for group in groups:
        total = sum(sizes[k] for k in group)
        assert total <= budget or len(group) == 1  # only a lone oversized item may exceed it
    for first, second in zip(groups, groups[1:]):  # greedy: the next item did not fit
        assert sum(sizes[k] for k in first) + sizes[second[0]] > budget


def test_a_claim_of_eight_thousand_partitions_takes_a_few_transactions() -> None:
    group_id, topic, thread = "mirror-maker", "events", "mirror-maker_host-1795390170616-a152798c-0"
    sizes = [
        (p, transactions.create_size(znodes.owner_path(group_id, topic, p), znodes.encode_owner(thread)))
        for p in range(8192)
    ]
    # One transaction would have been over 1 MiB: what ZooKeeper refused.
    assert sum(size for _, size in sizes) > 0xFFFFF
    groups = list(transactions.batches(sizes, 0xFFFFF // 2))
    assert 2 <= len(groups) <= 4 and sum(map(len, groups)) == 8192
