"""What an operator can do about a group's verdict (pure): one line per kind of problem, naming the command that helps."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from zkconsumer.admin import GroupVerdict, LagStatus, Ownership


def what_to_do(group: str, verdict: GroupVerdict, members: Sequence[str], problems: Sequence[str]) -> list[str]:
    """The steps that mend what the verdict flags, most urgent first (empty when all is well)."""
    name = shlex.quote(group)  # the commands are copied into a shell: "sp ace" or "a;b" stay one argument
    statuses = {v.status for v in verdict.partitions.values()}
    ownership = {v.ownership for v in verdict.partitions.values()}
    waiting = verdict.total_lag > 0
    steps: list[str] = []
    if not members and waiting:
        steps.append(
            "No member is registered while messages wait: start the group's consumers, or, if the group is "
            f"retired, delete its nodes (zkconsumer groups delete --group {name})."
        )
    elif Ownership.UNOWNED in ownership and members:
        steps.append(
            "Partitions have no owner while members are registered: a rebalance gave up (Scala's "
            "ConsumerRebalanceFailedException). Make every member rebalance: "
            f"zkconsumer groups rebalance --group {name} --execute."
        )
    if ownership & {Ownership.OWNER_GONE, Ownership.FOREIGN_SESSION}:
        steps.append(
            "Owner nodes are held by a consumer that is not registered, or by another session than its "
            "registration's: a member's old session still holds them (it ends within the session timeout), "
            f"or a stuck member does; zkconsumer groups rebalance --group {name} shows what blocks the group."
        )
    if Ownership.UNSUBSCRIBED in ownership:
        retired = sorted({t for (t, _p), v in verdict.partitions.items() if v.ownership is Ownership.UNSUBSCRIBED})
        steps.append(
            f"No registered member subscribes to {', '.join(retired)}: offsets left from a retired or renamed "
            "topic (the exporter forgets them --forget-retired-topics-after days after their last commit). "
            "If a member should read it, check that member's subscription; else nothing is to be done "
            "(`zkconsumer groups delete --topic` removes them only while the group has no member)."
        )
    if LagStatus.STOP in statuses:
        steps.append(
            "Owners stopped committing while messages wait: look at those members (their logs, their "
            "fetchers); a member that hangs keeps its partitions until its session ends."
        )
    if LagStatus.STALL in statuses:
        steps.append(
            "Owners commit the same offset again and again: a message they cannot process, or a consumer "
            "that commits without consuming; look at the message at the committed offset."
        )
    if LagStatus.REWIND in statuses:
        steps.append(
            "A committed offset went back: somebody reset the offsets (zkconsumer offsets, "
            "kafka-consumer-groups --reset-offsets) or a member committed an old position; expect re-delivery."
        )
    owned_warn = any(v.status is LagStatus.WARN and v.ownership is Ownership.OWNED for v in verdict.partitions.values())
    if owned_warn and not steps:
        steps.append(
            "The lag never shrinks: the members consume slower than producers write. Add members (up to one "
            "per partition) or make each faster."
        )
    if LagStatus.NOTFOUND in statuses:
        steps.append("Some log ends are unknown: no broker answered for those partitions (see log_ends_unavailable).")
    if problems:
        steps.append(
            "Some nodes could not be decoded (listed under problems): a writer other than Kafka's left "
            "them; zkconsumer groups describe names each."
        )
    return steps
