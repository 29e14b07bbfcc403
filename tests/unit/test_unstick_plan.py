"""groups rebalance's plan (pure): the nudge's registration is a member without threads everywhere, and what blocks."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin import MemberFacts, OwnerFacts, plan_unstick
from zkconsumer.cli.main import cli
from zkconsumer.config.compat import DEFAULT
from zkconsumer.coordinator.assignors import AssignmentInput, assign
from zkconsumer.coordinator.peers import evaluate_peers, registration_problem
from zkconsumer.coordinator.subscription import StaticSubscription, from_registration, thread_ids_for
from zkconsumer.zookeeper.nudge import nudge_outcome, trigger_child, trigger_data
from zkconsumer.zookeeper.znodes import Registration

G = "billing"
ALPHA, BETA = f"{G}_alpha", f"{G}_beta"


def members(**sessions: int) -> dict[str, MemberFacts]:
    return {f"{G}_{name}": MemberFacts(f"{G}_{name}", session, {"payments": 1}) for name, session in sessions.items()}


def test_the_nudge_holds_the_registration_of_a_member_without_threads() -> None:
    data = trigger_data(1732872000000)
    assert data == b'{"version":1,"subscription":{},"pattern":"static","timestamp":"1732872000000"}'
    registration = Registration.decode(data, "/consumers/billing/ids/x")
    assert registration_problem(registration) is None  # zkconsumer members take it as a peer, not a bad one
    assert from_registration(registration) == StaticSubscription(())
    child = trigger_child(G, 1732872000000, 42)
    assert child == "billing_zkconsumer-rebalance-1732872000000-000042"
    assert thread_ids_for(child, from_registration(registration), ["payments"]) == {}
    view = evaluate_peers(
        {ALPHA: Registration((("payments", 2),), "static", "1"), child: registration},
        {},
        ["payments"],
        own_id=ALPHA,
        group_id=G,
        exclude_internal=True,
        compat=DEFAULT,
    )
    assert view.ignored == {} and view.threads[child] == {}


def _consumers_for_topic(registrations: dict[str, Registration]) -> dict[str, list[str]]:
    view = evaluate_peers(
        registrations, {}, ["payments", "orders"], own_id=ALPHA, group_id=G, exclude_internal=True, compat=DEFAULT
    )
    out: dict[str, list[str]] = {}
    for threads in view.threads.values():
        for topic, ids in threads.items():
            out.setdefault(topic, []).extend(ids)
    return out


def test_a_member_without_threads_changes_no_assignment() -> None:
    group = {
        ALPHA: Registration((("payments", 2), ("orders", 1)), "static", "1"),
        BETA: Registration((("payments", 1),), "static", "2"),
    }
    nudge = Registration.decode(trigger_data(3), "/consumers/billing/ids/n")
    with_nudge = _consumers_for_topic({**group, trigger_child(G, 3, 1): nudge})
    assert with_nudge == _consumers_for_topic(group)
    partitions = {"payments": range(6), "orders": range(3)}
    for strategy in ("range", "roundrobin"):  # both read the threads per topic only
        assert assign(strategy, AssignmentInput(with_nudge, partitions)) == assign(
            strategy, AssignmentInput(_consumers_for_topic(group), partitions)
        )


def test_a_stuck_group_plans_a_nudge_with_no_blocker() -> None:
    owners = {("payments", p): OwnerFacts(f"{ALPHA}-0", 0xA, 5) for p in range(4)}
    plan = plan_unstick(G, members(alpha=0xA, beta=0xB), {"payments": [0, 1, 2, 3, 4, 5]}, owners)
    assert plan.blockers == []
    assert plan.unowned == [("payments", 4), ("payments", 5)]
    assert plan.idle_members() == [BETA]
    assert plan.nudge_parent == "/consumers/billing/ids"
    assert plan.as_dict()["unowned"] == ["payments-4", "payments-5"]


def test_an_owner_node_of_a_session_no_member_holds_blocks_and_is_named() -> None:
    owners = {
        ("payments", 0): OwnerFacts(f"{ALPHA}-0", 0xA),
        ("payments", 1): OwnerFacts("billing_ghost-0", 0xC),  # no such member
        ("payments", 2): OwnerFacts(f"{BETA}-0", 0xD),  # beta's, but of an earlier session
        ("payments", 3): OwnerFacts("garbage", 0xE),
        ("payments", 9): OwnerFacts("billing_ghost-0", 0xC),  # no such partition: no member claims it
    }
    plan = plan_unstick(G, members(alpha=0xA, beta=0xB), {"payments": [0, 1, 2, 3]}, owners)
    nodes = [b.node for b in plan.blockers]
    assert nodes == [f"/consumers/billing/owners/payments/{p}" for p in (1, 2, 3)]
    ghost, earlier, garbage = plan.blockers
    assert "owned by billing_ghost-0, no registered member, in session 0xc" in ghost.reason
    assert "payments-1 cannot claim it" in ghost.reason
    assert ghost.remedy.startswith("not deleted (a live session holds it): stop the process of session 0xc")
    assert "not the session of billing_beta's registration (0xb)" in earlier.reason
    assert "holds 'garbage', no thread id" in garbage.reason


def test_an_unusable_registration_and_an_empty_group_block() -> None:
    bad = {ALPHA: MemberFacts(ALPHA, 0xA, {}, problem="unreadable registration (not valid JSON)")}
    (blocker,) = plan_unstick(G, bad, {}, {}).blockers
    assert blocker.node == "/consumers/billing/ids/billing_alpha"
    assert "every Scala member's rebalance fails" in blocker.reason and "session 0xa holds it" in blocker.remedy
    (empty,) = plan_unstick(G, {}, {}, {}).blockers
    assert empty.node == "/consumers/billing/ids" and "no registered member" in empty.reason


def test_the_command_says_it_writes_only_with_execute() -> None:
    text = CliRunner().invoke(cli, ["groups", "rebalance", "--help"], env={"ZKCONSUMER_ZOOKEEPER": None}).stdout
    for needle in ("THIS WRITES", "--execute", "--dry-run", "--zookeeper", "--zk-digest", "Example"):
        assert needle in text, needle
    assert "groups rebalance" in CliRunner().invoke(cli, ["--help"]).stdout


def test_a_persistent_owner_node_is_no_session_to_wait_for() -> None:
    """ephemeralOwner 0 (a node restored by a copy tool) blocked the group for good with "wait until
    ZooKeeper expires session 0x0": now a blocker naming --delete-persistent-owners, or, with it,
    a node the plan deletes (at the version it read) before the nudge."""
    owners = {("payments", 0): OwnerFacts(f"{ALPHA}-0", 0, czxid=5, version=3)}
    refused = plan_unstick(G, members(alpha=0xA), {"payments": [0, 1]}, owners)
    (blocker,) = refused.blockers
    assert blocker.node == "/consumers/billing/owners/payments/0"
    assert "persistent" in blocker.reason and "--delete-persistent-owners" in blocker.remedy
    assert "expires session 0x0" not in blocker.line()
    allowed = plan_unstick(G, members(alpha=0xA), {"payments": [0, 1]}, owners, delete_persistent=True)
    assert allowed.blockers == [] and allowed.persistent_owners == [("/consumers/billing/owners/payments/0", 3)]
    assert allowed.as_dict()["delete_persistent_owners"] == ["/consumers/billing/owners/payments/0"]


@given(st.integers(0, 1000), st.lists(st.sampled_from(["a", "b", "c"]), unique=True), st.integers(0, 4))
def test_a_lost_answer_to_the_nudge_is_judged_by_the_ids_folder(version: int, children: list[str], grew: int) -> None:
    before = (version, sorted(children))
    assert nudge_outcome(before, before) == "not applied"
    assert nudge_outcome(before, (version + 2, sorted(children))) == "applied"
    if grew not in (0, 2):
        assert nudge_outcome(before, (version + grew, sorted(children))) == "unknown"
    assert nudge_outcome(before, (version + 2, sorted({*children, "new"}))) == "unknown"  # a member came
