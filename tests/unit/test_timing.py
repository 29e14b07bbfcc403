"""The timing rules (config/timing.py, pure): the sync-renewal safety rule against its worst case, the linger cap, and their checks at config time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.config.checks import ConfigError
from zkconsumer.config.compat import SUPPORTED, Compat
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.config.timing import (
    LEASE_FRACTION,
    RENEWALS_PER_SESSION,
    linger_cap_ms,
    renewal_for,
    sync_renewal_safe,
)
from zkconsumer.consumer.delivery import DeliveryGate
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.membership import Membership, State

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g"}


def worst_lease_overrun_s(session_s: float, tick_s: float, phase_s: float) -> float:
    """How far a sync-confirmed lease can outlive the session (> 0: unsafe), the old leader's last sync
    answered `phase_s` (0..tick) after the new leader began counting the session at 0: the renewal it
    answered was sent then, and the lease counts from the one before, a renewal interval earlier."""
    sent = phase_s
    heard = sent - session_s / RENEWALS_PER_SESSION
    return heard + LEASE_FRACTION * session_s - session_s


seconds = st.floats(min_value=0.5, max_value=120.0, allow_nan=False)


@given(seconds, st.floats(min_value=0.05, max_value=60.0, allow_nan=False), st.floats(min_value=0.0, max_value=1.0))
def test_sync_is_called_safe_exactly_when_no_phase_of_the_old_leaders_last_tick_overruns(
    session_s: float, tick_s: float, fraction: float
) -> None:
    overrun = worst_lease_overrun_s(session_s, tick_s, fraction * tick_s)
    if sync_renewal_safe(session_s, tick_s):
        assert overrun <= 1e-9
    else:
        assert worst_lease_overrun_s(session_s, tick_s, tick_s) > 0  # the last phase overruns


def test_the_reviewed_settings() -> None:
    """Issue 51, finding 4: a 4 s session at tickTime 2 s (the ZooKeeper minimum there, and the sim's
    and lab's setting) is not safe with sync renewals; the 6 s default is."""
    assert not sync_renewal_safe(4.0, 2.0) and renewal_for(4.0, 2.0) == "check"
    assert worst_lease_overrun_s(4.0, 2.0, 2.0) == pytest.approx(0.6)
    assert sync_renewal_safe(6.0, 2.0) and renewal_for(6.0, 2.0) == "sync"
    assert worst_lease_overrun_s(6.0, 2.0, 2.0) == pytest.approx(-0.1)


class RecordingIO:
    """The two ways a renewal reaches ZooKeeper, recorded."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def exists_after_sync(self, path: str) -> object:
        self.calls.append("sync")
        return type("Stat", (), {"ephemeralOwner": 0x11})()

    def transaction(self) -> list[str]:
        return []

    def commit(self, txn: list[str], what: str) -> list[object]:
        self.calls.append("check")
        return [True]


class Fence:
    def guard(self, txn: list[str]) -> None:
        txn.append("check")

    def refused(self, results: list[object]) -> bool:
        return False


class Group:
    def __init__(self, granted_ms: int) -> None:
        self.io = RecordingIO()
        handler = type("Handler", (), {"negotiated_session_timeout_ms": granted_ms, "handshake_started_at": None})()
        self.client = type("Client", (), {"handler": handler, "client_state": "CONNECTED"})()
        self.session = self.live_session = 0x11
        self.member_path = "/consumers/g/ids/g_c"
        self.consumer_id, self.group_id = "g_c", "g"

    def require_fence(self) -> Fence:
        return Fence()


@pytest.mark.parametrize(("granted_ms", "kind"), [(4000, "check"), (6000, "sync"), (40000, "sync")])
def test_the_lease_is_renewed_with_a_quorum_write_where_a_sync_is_not_safe(granted_ms: int, kind: str) -> None:
    group = Group(granted_ms)
    member = Membership(
        group,  # type: ignore[arg-type]
        Assignment(),
        DeliveryGate(clock=lambda: 100.0),
        registration=lambda: b"{}",
        session_timeout_s=60.0,  # the server granted less: the rule follows the granted session
        trigger=lambda _reason: None,
        clock=lambda: 100.0,
        tick_s=2.0,
    )
    member.state = State.CONNECTED
    member.renew_lease()
    assert group.io.calls == [kind]


@pytest.mark.parametrize("release", SUPPORTED)
def test_the_linger_cap_is_half_the_scala_retry_budget_of_every_release(release: str) -> None:
    assert linger_cap_ms(Compat.parse(release)) == 3000
    config = ConsumerConfig.from_mapping({**BASE, "zkconsumer.compat.version": release})
    assert config.release_linger_max_ms == 3000


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"zkconsumer.release.linger.max.ms": 10000}, "zkconsumer.release.linger.max.ms"),
        ({"zkconsumer.release.linger.ms": 4000}, "zkconsumer.release.linger.ms"),
        (
            {"zkconsumer.release.linger.ms": 2000, "zkconsumer.release.linger.max.ms": 1500},
            "zkconsumer.release.linger.max.ms",
        ),
        ({"zkconsumer.zookeeper.tick.ms": 0}, "zkconsumer.zookeeper.tick.ms"),
    ],
)
def test_timing_settings_that_break_a_rule_are_refused_naming_the_key(props: dict[str, int], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_mapping({**BASE, **props})
    assert caught.value.key == key
    assert key in str(caught.value)


def test_a_linger_of_its_own_sets_the_maximum_no_lower() -> None:
    config = ConsumerConfig.from_mapping({**BASE, "zkconsumer.release.linger.ms": 3000})
    assert (config.release_linger_ms, config.release_linger_max_ms) == (3000, 3000)
