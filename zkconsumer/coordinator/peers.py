"""Split the group's registrations into members we can assign and peers we must ignore, and report them."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.subscription import (
    BLACK_LIST,
    MAX_STREAMS,
    STATIC,
    WHITE_LIST,
    from_registration,
    java_regex_to_python,
    normalise_regex,
    scala_map_head,
    thread_ids_for,
    validate_topic,
)
from zkconsumer.errors import ZkConsumerError
from zkconsumer.zookeeper.znodes import CONSUMERS, Registration, member_path

log = logging.getLogger(__name__)

_SHOWN = 120  # peer-supplied text is capped in reasons: a registration may hold up to 1 MB


@dataclass(frozen=True)
class PeerView:
    """threads: consumer id -> topic -> thread ids for every usable member, in registration order
    (exactly what rebalance.member_threads gives for them). ignored: consumer id -> one-line reason."""

    threads: dict[str, dict[str, list[str]]]
    ignored: dict[str, str]


class OwnRegistrationError(ZkConsumerError, ValueError):
    """Our own registration is missing or unusable: the group cannot be assigned without it.

    Missing is retriable (deleted by a tool, or our session ended, between our check and the read:
    the next attempt registers again); unusable is not (our own writer produced it, or someone
    overwrote it: a member cannot go on from there).
    """

    def __init__(self, path: str, reason: str, retriable: bool = False) -> None:
        super().__init__(f"{path}: our own registration {reason}")
        self.path = path
        self.reason = reason
        self.retriable = retriable

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the extra arguments
        return (type(self), (self.path, self.reason, self.retriable))


def _show(text: str) -> str:
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text)} chars)"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 2 * _SHOWN else text[: 2 * _SHOWN] + "..."


def _count_problem(count: int, what: str) -> str | None:
    if 1 <= count <= MAX_STREAMS:
        return None
    return f"stream count {count} for {what} (expected 1..{MAX_STREAMS})"


def _wildcard_problem(pattern: str, raw_regex: str, count: int) -> str | None:
    # Same steps, in the same order, as TopicFilter.__post_init__, so a regex passing here cannot fail there.
    regex = normalise_regex(raw_regex)
    what = f"{pattern} regex {_show(regex)}"
    try:
        translated = java_regex_to_python(regex)
    except ValueError as exc:
        # Java may well accept it (intersections, \p{javaLowerCase}...); we only know we cannot match like Java.
        return f"{what} cannot be evaluated here: {_one_line(exc)}"
    try:
        re.compile(translated, re.ASCII)
    except re.error as exc:
        return f"{what} is invalid: {_one_line(exc)}"
    except (OverflowError, RecursionError) as exc:  # a{99999999999}, or thousands of nested groups
        return f"{what} cannot be evaluated here: {_one_line(exc)}"
    return _count_problem(count, what)


def registration_problem(registration: Registration) -> str | None:
    """Why this registration cannot be turned into thread ids here, as one line; None when it can.

    Reads it as TopicCount.constructTopicCount does (see subscription.from_registration): white_list or
    black_list with a non-empty map is a wildcard on the map's head, whose other entries nobody reads;
    any other pattern string is static, as in Scala, so an unknown pattern alone is no problem.
    """
    pattern = registration.pattern
    if pattern in (WHITE_LIST, BLACK_LIST) and registration.subscription:
        raw_regex, count = scala_map_head(registration.subscription)
        return _wildcard_problem(pattern, raw_regex, count)
    read_as = "" if pattern == STATIC else f" (pattern {_show(pattern)} is read as static, as Scala does)"
    for topic, count in registration.subscription:
        try:
            validate_topic(topic)
        except ValueError:
            return f"illegal topic name {_show(topic)}: not 1..249 of [A-Za-z0-9._-], or '.' or '..'{read_as}"
        problem = _count_problem(count, f"topic {_show(topic)}")
        if problem:
            return problem + read_as
    return None


def _own_path(group_id: str, own_id: str) -> str:
    try:
        return member_path(group_id, own_id)
    except ValueError:  # not a legal znode name; still say where we looked
        return f"{CONSUMERS}/{group_id}/ids/{own_id}"


def evaluate_peers(
    registrations: Mapping[str, Registration],
    unreadable: Mapping[str, Exception],
    all_topics: Sequence[str],
    *,
    own_id: str,
    group_id: str,
    exclude_internal: bool,
    compat: Compat,
) -> PeerView:
    """Thread ids of every member whose registration we can evaluate; every other member is ignored.

    registrations: consumer id -> decoded registration; unreadable: consumer id -> the error
    Registration.decode raised (ZkDataError) for members whose node did not decode. Every member of
    either mapping ends up in exactly one of PeerView.threads and PeerView.ignored. Peer input never
    raises; our own registration (own_id) being missing, unreadable or unusable raises
    OwnRegistrationError naming its node, because ignoring ourselves would silently consume nothing.
    """
    both = registrations.keys() & unreadable.keys()
    if both:
        raise ValueError(f"members both readable and unreadable: {sorted(both)!r}")
    ignored: dict[str, str] = {}
    for cid, registration in registrations.items():
        problem = registration_problem(registration)
        if problem is not None:
            ignored[cid] = problem
    for cid, exc in unreadable.items():
        ignored[cid] = f"unreadable registration: {_one_line(exc)}"
    if own_id not in registrations and own_id not in unreadable:
        raise OwnRegistrationError(_own_path(group_id, own_id), "is missing from the group's members", retriable=True)
    if own_id in ignored:
        raise OwnRegistrationError(_own_path(group_id, own_id), f"cannot be used: {ignored[own_id]}")
    threads: dict[str, dict[str, list[str]]] = {}
    for cid, registration in registrations.items():
        if cid not in ignored:  # validated above: from here on a ValueError is a bug of ours, so let it raise
            subscription = from_registration(registration, compat=compat)
            threads[cid] = thread_ids_for(
                cid, subscription, all_topics, exclude_internal=exclude_internal, compat=compat
            )
    return PeerView(threads=threads, ignored=ignored)


class IgnoredPeerReporter:
    """Logs the set of ignored peers when it changes, not on every rebalance attempt; `count` feeds a metric.

    Why peers are ignored, and what that means next to Scala members (checked against Kafka 1.1.1's
    TopicCount, TopicFilter, PartitionAssignor, ZkUtils and ZookeeperConsumerConnector):

    A Scala member does not ignore a peer. Its rebalance first releases every partition it owns, then
    builds the AssignmentContext, which reads every member's registration. There a stream count < 1
    fails `assert(nConsumers >= 1)` (for a wildcard only once some topic matches), a regex Java
    rejects throws "... is an invalid regex.", and a static topic "" or ".." makes an illegal znode
    path when its partitions are read. syncedRebalance catches that, logs it at INFO, closes its
    fetchers, sleeps rebalance.backoff.ms and retries, rebalance.max.retries times; then it throws
    ConsumerRebalanceFailedException, which createMessageStreams passes to the application and the
    watcher thread logs before it waits for the next group or topic change. Either way that Scala
    member owns and consumes nothing until the bad registration is removed or corrected.

    zkconsumer members instead compute the assignment WITHOUT the ignored peer and keep consuming
    their share of it. Scala members compute (or would compute) an assignment that includes it, so
    the two sides disagree: zkconsumer members may claim partitions that the Scala assignment gives to
    a stuck Scala member (or to the ignored peer), while the shares the zkconsumer assignment gives to
    the stuck Scala members stay unconsumed. Claims are all-or-nothing per member and fenced by the
    owner nodes, so no partition is ever owned twice: a member that finds a partition still owned
    fails that attempt, drops what it claimed in it, and retries.

    Some peers Scala reads fine but we cannot: a regex Java accepts that we cannot translate (such
    as `[a-z&&[^x]].*` or `\\p{javaLowerCase}+`), a static topic like "a/b" (Scala reads it as a
    topic with no partitions), or a count above MAX_STREAMS (Scala builds that many thread ids).
    Then Scala members do rebalance, including the peer, and the two assignments can claim the same
    partitions; the owner nodes still keep every partition to one owner, but the losing side's
    attempts fail, so the group may not settle.

    In every case the fix is to remove or correct the bad registration
    (/consumers/<group>/ids/<consumerId>); membership changes then trigger a rebalance everywhere.
    This class is meant for one rebalance thread; `count` may be read from any thread.
    """

    def __init__(self, logger: logging.Logger = log) -> None:
        self._logger = logger
        self._last: frozenset[tuple[str, str]] = frozenset()

    @property
    def count(self) -> int:
        """How many peers the last report ignored."""
        return len(self._last)

    def report(self, ignored: Mapping[str, str]) -> bool:
        """Log once per change of the ignored (member, reason) set; returns whether it logged."""
        current = frozenset(ignored.items())
        if current == self._last:
            return False
        self._last = current
        if current:
            listing = "; ".join(f"{_show(cid)}: {reason}" for cid, reason in sorted(current))
            self._logger.warning(
                "ignoring %d group member(s) whose registration cannot be evaluated; the assignment is "
                "computed without them, and Scala members may fail to rebalance until each is removed or "
                "corrected: %s",
                len(current),
                listing,
            )
        else:
            self._logger.info("no group member is ignored any more: the assignment includes every member again")
        return True
