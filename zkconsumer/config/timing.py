"""The member's timing constants in one place, how they depend on each other, and their checks at config time (pure).

Every duration a member keeps follows from a few settings; docs/design.md, "Timing rules", gives the
arithmetic. With S the session timeout ZooKeeper granted (at most `zookeeper.session.timeout.ms`),
T the servers' tickTime (`zkconsumer.zookeeper.tick.ms`) and B the Scala retry budget of
`zkconsumer.compat.version` ((rebalance.max.retries - 1) x rebalance.backoff.ms with that
release's defaults, 6 s in every release 0.8.2-1.1.1):

- the delivery lease lasts LEASE_FRACTION x S from the renewal before the last confirmed one;
- renewals run every S / RENEWALS_PER_SESSION (>= T / 2, since ZooKeeper grants no S under 2 T);
- a renewal is a sync and a read where `sync_renewal_safe(S, T)`, else a quorum write (a check of
  our fence node in a transaction): `renewal_for`;
- the release linger lies in [zkconsumer.release.linger.ms, zkconsumer.release.linger.max.ms],
  and the maximum in LINGER_BUDGET_SHARE x B (`linger_cap_ms`), default that cap;
- a partition handed over after a linger and unowned B after its delete nudges the group;
- a commit waits at most S for the rebalance lock; rebalance back-offs run from
  rebalance.backoff.ms doubling to zkconsumer.rebalance.recheck.ms, holding no lock.
"""

from __future__ import annotations

from typing import Any

from zkconsumer.config.checks import invalid_value
from zkconsumer.config.compat import Compat

# The lease ends this share of the session after a touch the leader certainly heard of: the rest
# is margin for clock rates and for stopping delivery (coordinator/membership.py).
LEASE_FRACTION = 0.9
# Lease renewals per session timeout.
RENEWALS_PER_SESSION = 4
# The release linger never exceeds this share of the Scala joiner's retry budget: the rest is for
# our steps before the linger (decide, commit, the listener) and the deletes after it.
LINGER_BUDGET_SHARE = 0.5
DEFAULT_TICK_MS = 2000  # ZooKeeper's default tickTime


def sync_renewal_safe(session_s: float, tick_s: float) -> bool:
    """Whether a sync-confirmed renewal can never lease past the session (pure).

    A leader cut off from the majority answers syncs until its own quorum check fails, up to one
    tick T after the majority's new leader started counting the session (at t0, expiring it at
    t0 + S at the earliest). The lease counts from the renewal before the last confirmed one, sent
    at least S / RENEWALS_PER_SESSION earlier, so it ends by t0 + T - S/4 + LEASE_FRACTION x S.
    Safe iff that is <= t0 + S: T <= (1 + 1/4 - 0.9) S = 0.35 S, i.e. S >= 2.86 T (5.72 s at T = 2 s:
    the 6 s default passes by 0.1 s, a 4 s session fails by 0.6 s)."""
    return tick_s <= (1.0 + 1.0 / RENEWALS_PER_SESSION - LEASE_FRACTION) * session_s


def renewal_for(session_s: float, tick_s: float) -> str:
    """How a lease renewal is confirmed at this session: "sync" where safe, else "check" (a quorum write)."""
    return "sync" if sync_renewal_safe(session_s, tick_s) else "check"


def linger_cap_ms(compat: Compat) -> int:
    """The longest release linger that leaves a Scala joiner of this release its last attempt."""
    return int(LINGER_BUDGET_SHARE * compat.scala_retry_budget_s * 1000)


def check_timing(values: dict[str, Any]) -> None:
    """The rules between timing properties, on a config's final values (compat parsed); fills the
    derived linger maximum. Raises ConfigError naming the property to change."""
    compat: Compat = values["compat"]
    cap = linger_cap_ms(compat)
    budget = (
        f"half the retry budget of Scala {compat} members ({cap} ms of {int(compat.scala_retry_budget_s * 1000)}: "
        "a longer linger outlasts a joiner's last attempt, which then owns nothing)"
    )
    if values["release_linger_ms"] > cap:
        raise invalid_value("zkconsumer.release.linger.ms", values["release_linger_ms"], f"integer <= {budget}")
    if values["release_linger_max_ms"] is None:
        values["release_linger_max_ms"] = max(cap, values["release_linger_ms"])
    if values["release_linger_max_ms"] > cap:
        raise invalid_value("zkconsumer.release.linger.max.ms", values["release_linger_max_ms"], f"integer <= {budget}")
    if values["release_linger_max_ms"] < values["release_linger_ms"]:
        raise invalid_value(
            "zkconsumer.release.linger.max.ms",
            values["release_linger_max_ms"],
            f"integer >= zkconsumer.release.linger.ms ({values['release_linger_ms']})",
        )
