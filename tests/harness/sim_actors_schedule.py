"""Seeded fault schedules with every actor: the lease's, a Scala joiner, dual commit to Kafka, an isolated leader.

`ActorsSchedule` is a `LeaseSchedule` (sim_lease_schedule) whose members linger before a release
as production members do (the linger's wait passes in logical time, the Scala joiner acting
meanwhile), and whose steps sometimes bring in one more actor, drawn from a generator of its own
so that the base schedule's draws stay as they were:

- a Scala joiner (sim_scala_joiner) of the oldest configured release, joining mid-run: 4 attempts
  2 s apart, then nothing until ids/ changes. Invariant: in the quiet phase, no partition stays
  unowned past RECOVERY_MS while a live member subscribes to it (the linger cap keeps the joiner's
  last attempt free; the watchdog's nudge recovers a joiner that gave up anyway);
- dual commit, in half the schedules (sim_kafka_offsets): every member also commits to an
  in-memory Kafka offset store, whose invariant is that no write moves a partition's offset below
  what its current owner committed there;
- a follower that serves past the session (syncLimit x tickTime > S), so that a successor owns
  and commits while the member behind it still commits;
- an isolated leader (sim_leader): a member's server answers syncs and reads for one tickTime after
  the majority's new leader began counting the member's session. Invariant 1 (delivery only under
  ownership) finds a lease that outlives the session.
"""

from __future__ import annotations

import random
from typing import Any

from harness.sim_follower import LostFollower
from harness.sim_kafka_offsets import KafkaOffsetStore
from harness.sim_leader import IsolatedLeader
from harness.sim_lease_schedule import SYNC_LIMIT_MS, LeaseSchedule
from harness.sim_scala_joiner import BACKOFF_MS, MAX_RETRIES, ScalaJoiner
from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Result
from harness.simulation import SimMember, owner_nodes
from zkconsumer.config.compat import DEFAULT
from zkconsumer.config.timing import DEFAULT_TICK_MS
from zkconsumer.coordinator.assignors import AssignmentInput, assign
from zkconsumer.zookeeper import znodes

LINGER_MS = 1000  # zkconsumer.release.linger.ms of every member here (the floor; the cap is 3 s)
SCALA_BUDGET_MS = (MAX_RETRIES - 1) * BACKOFF_MS
WATCHDOG_ROUNDS = 4  # the quiet phase runs each member's watchdog check every 4 x 250 ms
ACTOR_RATE = 0.02  # per step, for each of the actors here


class ActorsOptions(Options):
    @property
    def liveness_bound_ms(self) -> int:
        """Options' bound, plus a joiner that gave up: the watchdog looks a retry budget after the
        delete, nudges, and the joiner's fresh attempts need one more budget at most."""
        return super().liveness_bound_ms + 2 * SCALA_BUDGET_MS + WATCHDOG_ROUNDS * ROUND_MS


class ActorsSchedule(LeaseSchedule):
    """One seeded run with every actor. `renewal`: LeaseSchedule's."""

    def __init__(self, seed: int, options: Options | None = None, *, renewal: str | None = None) -> None:
        super().__init__(seed, ActorsOptions(**(options or Options()).__dict__), renewal=renewal)
        self.actor_rng = random.Random(f"actors-{seed}")
        self.scala: ScalaJoiner | None = None
        self.unowned_since: dict[int, int] = {}
        # Half the schedules run dual commit (offsets.storage=kafka + dual.commit.enabled) against
        # an in-memory Kafka offset store that checks no write rewinds a partition's owner.
        self.kafka = KafkaOffsetStore(GROUP, self.violation) if self.actor_rng.random() < 0.5 else None

    def add_member(self, *, incremental: bool = True, transaction_max_bytes: int = 1 << 19) -> SimMember:
        member = super().add_member(incremental=incremental, transaction_max_bytes=transaction_max_bytes)
        if self.kafka is not None:
            member.offsets.use_zookeeper = member.offsets.use_kafka = True
            member.fetcher.consumer = self.kafka.view(member)
        return member

    def _fault(self, client: Any, op: str, path: str) -> Any:
        # The joiner's own calls go unfaulted: a give-up of its own making is no test of ours.
        if self.scala is not None and client is self.scala.client:
            return None
        return super()._fault(client, op, path)

    def member_options(self) -> dict[str, Any]:
        return {"release_linger_ms": LINGER_MS, "linger_wait": self.linger_wait}

    def foreign_sessions(self) -> set[int]:
        session = self.scala.session() if self.scala is not None else None
        return {session} if session is not None else set()

    def linger_wait(self, member: SimMember, seconds: float) -> None:
        """A member lingers: logical time passes in rounds, the Scala joiner acting in each."""
        self.note(f"{member.name} lingers {seconds:.2f}s")
        left = int(seconds * 1000 + 0.999)
        while left > 0:
            self.model.advance(min(ROUND_MS, left))
            left -= ROUND_MS
            if self.scala is not None:
                self.scala.act()

    def step(self) -> None:
        if self.scala is not None:
            self.scala.act()
        for name in list(self.cut):  # the auto-commit thread of a member behind a cut server runs on
            member = next(m for m in self.members if m.name == name)
            if member.alive and self.actor_rng.random() < 0.3:
                member.commit()
        draw = self.actor_rng.random()
        if draw < ACTOR_RATE and self.scala is None:
            self.scala = ScalaJoiner(self.model, "scala1", GROUP, TOPIC, self.log, self.deliveries)
            self.note("join scala1 (a Scala joiner)")
        elif draw < 2 * ACTOR_RATE:
            self.isolate_leader()
        elif draw < 3 * ACTOR_RATE:
            self.lose_leader_for_long()
        super().step()

    def lose_leader_for_long(self) -> None:
        """A follower cut from its leader for syncLimit x tickTime past the session (5 x 2 s = 10 s
        is ZooKeeper's sample zoo.cfg beside a 4 s session): the leader expires the session and a
        successor may claim and commit while the member behind the follower still reads, and commits."""
        free = [m for m in self.live() if not m.frozen and m.name not in self.cut and m.client.connected]
        if not free:
            return
        member = self.actor_rng.choice(free)
        follower = LostFollower(self.model, member.client)
        follower.cut()
        serves_ms = self.actor_rng.choice([6000, 10000])
        self.cut[member.name] = (follower, self.model.now_ms + serves_ms - SYNC_LIMIT_MS)
        self.note(f"{member.name}'s server lost its leader and serves {serves_ms} ms")

    def isolate_leader(self) -> None:
        """The member's server is the old leader, cut from the majority, for one tickTime; time
        passes in 100 ms steps meanwhile (a window of tenths of a second: a random step's advance
        would jump it), the member renewing and iterating as its threads do, the producer writing
        to what it owns, and the others hearing and rebalancing."""
        free = [m for m in self.live() if not m.frozen and m.name not in self.cut and m.client.connected]
        if not free:
            return
        member = self.actor_rng.choice(free)
        leader = IsolatedLeader(self.model, member.client)
        leader.cut()
        self.note(f"{member.name}'s leader lost the majority")
        self.cut[member.name] = (leader, self.model.now_ms)  # no other step of its link meanwhile
        end = self.model.now_ms + member.membership.lease.session_timeout_s() * 1000 + 1000
        gives_up = self.model.now_ms + DEFAULT_TICK_MS
        others = [m for m in self.live() if m is not member and not m.frozen]
        while self.model.now_ms < end and not self.result.violations:
            self.model.advance(100)
            if member.name in self.cut and self.model.now_ms >= gives_up:
                leader.give_up()
                del self.cut[member.name]
                self.note(f"{member.name}'s old leader stepped down and dropped it")
            owned = sorted(member.assignment.owned())
            if owned:
                self.log.produce(self.actor_rng.choice(owned), 1)
            member.renew_lease()
            member.consume(3)
            for other in others:
                if other.alive and not other.frozen:
                    self.model.deliver(other.client)
                    other.renew_lease()
                    other.rebalance()
                    other.consume(3)
        if member.name in self.cut:
            leader.give_up()
            del self.cut[member.name]

    def settle_round(self, round_: int) -> None:
        if self.scala is None:
            return
        self.scala.act()
        if round_ % WATCHDOG_ROUNDS == WATCHDOG_ROUNDS - 1:
            for m in self.live():
                m.check_health()
        self.check_nothing_stranded()

    def check_nothing_stranded(self) -> None:
        """No partition unowned past the recovery bound while a live member subscribes to it."""
        owned = owner_nodes(self.model, GROUP, TOPIC)
        now = self.model.now_ms
        for p in range(self.partitions):
            if p in owned:
                self.unowned_since.pop(p, None)
                continue
            since = self.unowned_since.setdefault(p, now)
            if now - since > self.o.liveness_bound_ms:
                stranded = " (scala1 gave up and waits for ids/)" if self.scala and self.scala.stranded else ""
                self.violation(f"{TOPIC}-{p} unowned for {now - since} ms with live subscribers{stranded}")
                return

    def expected_owners(self) -> dict[int, str]:
        consumers = sorted(t for m in self.live() for t in m.thread_ids())
        if self.scala is not None and self.model.exists(znodes.member_path(GROUP, self.scala.consumer_id)):
            # (an operator may delete its registration: Scala never looks, so it stays out)
            consumers = sorted([*consumers, self.scala.thread])
        inp = AssignmentInput(
            consumers_for_topic={TOPIC: consumers} if consumers else {},
            partitions_for_topic={TOPIC: list(range(self.partitions))},
        )
        return {p: thread for (_, p), thread in assign("range", inp, DEFAULT).items()}


def run_actor_schedules(first_seed: int, count: int, options: Options | None = None) -> list[Result]:
    """The failing results of `count` ActorsSchedules from `first_seed`."""
    failures = []
    for seed in range(first_seed, first_seed + count):
        result = ActorsSchedule(seed, options).run()
        if result.violations:
            failures.append(result)
    return failures
