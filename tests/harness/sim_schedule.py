"""Seeded fault schedules over simulated members, with the group's safety invariants checked after every step.

Invariants (each violation is a line naming the step, member and partition):
  1. delivery only under ownership: when a member hands out a message, ZooKeeper holds that
     partition's owner node for the delivering thread in the member's live session (so at most
     one member delivers a partition at a time);
  2. no duplicate outside the uncommitted window: a delivered offset is never below the
     partition's committed offset at that moment;
  3. every owner node is accounted for: between steps, each owner node belongs to the live session
     of a member that holds its partition as owned, releasing or orphan (nothing it created is
     left for nobody to delete);
  4. liveness: once faults stop, with no watchdog, the group settles within LIVENESS_BOUND_MS on
     the assignment every member computes, with no extra owner nodes, every produced message is
     delivered, and the committed offsets reach the log ends;
  5. no bug: a non-retriable exception from any production step is a violation;
  6. no delivery of a partition whose owner node is not ours: after every step, a member that is
     connected, has heard every event ZooKeeper sent it, and whose gate is open holds as active
     (deliverable) only partitions whose owner node holds its thread id in its registered, live
     session.

Besides members, two actors meddle with the group's nodes as production does: a Scala-like member
acting on a stale topic registry, which deletes the owner paths it once saw without checking data
or version (KAFKA-262/KAFKA-286), and an operator (or a tool) deleting or rewriting owner nodes,
fence nodes and registrations. Their deletes and rewrites of owner nodes hit members that can hear
of them (connected, not frozen, and through a rebalance since its link last dropped) and members
reconnected in the same session whose owner nodes are not read again yet, which deliver nothing
meanwhile (issue 51, finding 2): kazoo drops every watch with the link, so a member cut off from
ZooKeeper cannot know, and delivers on its lease meanwhile (docs/design.md, "Fencing limits"). The notification reaches every connected member at once: a
delivery in the round trip between a change and its notification is a window no client can close.

Besides faults aimed at single ZooKeeper calls, the fault phase pauses attempts where they make no
ZooKeeper call (the listener's callbacks, and just before each owner-node transaction: between a
claim's transactions, before a release) or waits on the wire (between the requests of a pipelined
read of registrations or owner nodes), and lets the world move on there: the member's session
expires and kazoo reconnects in a new one, other members take steps, a member joins, the member's
own watch callbacks run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from harness.simulation import Delivery, SimLog, SimMember, committed, owner_nodes
from harness.zkmodel import FAIL_AFTER, FAIL_BEFORE, FakeKazooClient, Fault, ZkModel, slow
from zkconsumer.cluster import broker_nodes
from zkconsumer.config.compat import DEFAULT
from zkconsumer.coordinator.assignors import AssignmentInput, assign
from zkconsumer.zookeeper import znodes

GROUP, TOPIC = "g", "t"
BACKOFF_MS = 2000  # rebalance.backoff.ms's default: a real member retries a failed run after about this
ROUND_MS = 250  # the settle phase's step of logical time


@dataclass
class Options:
    members: int = 3
    partitions: int = 6
    steps: int = 120
    session_timeout_ms: int = 4000
    fault_rate: float = 0.03  # per ZooKeeper call
    pause_rate: float = 0.2  # per pause point: the world moves on while the attempt waits there
    settle_rounds: int = 400

    @property
    def liveness_bound_ms(self) -> int:
        """How long after faults stop the group must have settled: the longest session (a crashed
        member's nodes go with it, a tick late at most) plus three back-offs."""
        return self.session_timeout_ms + 500 + 3 * BACKOFF_MS


@dataclass
class Result:
    seed: int
    violations: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    delivered: int = 0
    produced: int = 0
    settled_ms: int | None = None  # how long after faults stopped the group converged


class Schedule:
    """One seeded run: a small group under random faults, then a quiet phase that must converge."""

    def __init__(self, seed: int, options: Options | None = None) -> None:
        self.seed = seed
        self.o = options or Options()
        self.rng = random.Random(seed)
        self.model = ZkModel(tick_ms=500, max_session_timeout_ms=self.o.session_timeout_ms)
        self.log = SimLog()
        self.result = Result(seed)
        self.members: list[SimMember] = []
        self.deliveries: list[Delivery] = []
        self.faulty = False
        self.pausing = False  # inside a pause: the paused member is mid-attempt
        self.vary_members = False  # run() draws each member's mode and transaction size
        self.offsets_dropped = False
        self.stale_registry: list[str] = []  # owner paths the Scala-like actor saw once
        self._next_id = 0
        admin = self.model.client("admin")
        admin.start()
        self.admin = admin
        broker = broker_nodes.BrokerInfo(1, "localhost", 9092, ("PLAINTEXT://localhost:9092",), None, 4, timestamp="1")
        admin.create(znodes.broker_path(1), broker_nodes.encode_broker(broker), makepath=True)
        self.partitions = self.o.partitions
        admin.create(znodes.topic_path(TOPIC), self._topic_data(), makepath=True)
        self.model.set_fault_hook(self._fault)

    def _topic_data(self) -> bytes:
        return broker_nodes.encode_topic_partitions({p: [1] for p in range(self.partitions)})

    def _fault(self, client: FakeKazooClient, op: str, path: str) -> Fault | None:
        if not self.faulty or getattr(client, "name", "") == "admin":
            return None
        # Where an attempt waits on the wire: before an owner-node transaction, and between the
        # requests of a pipelined read of registrations or owner nodes (kazoo's event thread may
        # run the member's own watch callbacks then, behind the answers already in).
        owner_write = op in ("multi", "multi-delete") and "/owners/" in path
        group_read = op == "get" and ("/ids/" in path or "/owners/" in path)
        if owner_write or group_read:
            member = next((m for m in self.members if m.client is client), None)
            if member is not None:
                self.pause(member, f"{op} {path}")
        if self.rng.random() >= self.o.fault_rate:
            return None
        fault = self.rng.choice([FAIL_BEFORE, FAIL_AFTER, slow(self.rng.choice([50, 500, 3000]))])
        self.note(f"fault {fault} at {getattr(client, 'name', '?')} {op} {path}")
        return fault

    def note(self, line: str) -> None:
        self.result.trace.append(f"[{self.model.now_ms}ms] {line}")

    def violation(self, text: str) -> None:
        self.result.violations.append(f"seed {self.seed} t={self.model.now_ms}ms: {text}")

    def pause(self, member: SimMember, where: str) -> None:
        """A pause point of `member`'s attempt: sometimes the world moves on meanwhile. The member's
        own steps are not run (it is mid-attempt); its client stays connected (a call may follow at
        once), possibly in a new session."""
        if not self.faulty or self.pausing or not member.alive or self.rng.random() >= self.o.pause_rate:
            return
        self.pausing = True
        try:
            kind = self.rng.choice(
                ["expire", "expire+join", "expire+others", "others", "join", "others+own", "meddle+own"]
            )
            self.note(f"pause {member.name} at {where}: {kind}")
            if kind.startswith("meddle"):  # an operator or a stale Scala member, mid-attempt
                self.rng.choice([self.operator, self.scala_stale])()
            if kind.startswith("expire") and member.client.connected:
                self.model.expire(member.client)  # LOST reaches the listeners before the new session opens
            if kind.endswith("join") and len(self.live()) < 6:
                self.add_member().rebalance()
            if "others" in kind:
                others = [m for m in self.live() if m is not member and not m.frozen]
                for _ in range(self.rng.randint(1, 4)):
                    if others:
                        other = self.rng.choice(others)
                        self.model.deliver(other.client)
                        self.rng.choice([other.rebalance, other.commit, lambda o=other: o.consume(3)])()
            if kind.endswith("own"):  # the member's own watch callbacks run now, mid-attempt
                self.model.deliver(member.client)
        finally:
            self.pausing = False

    def calm_rounds(self, members: list[SimMember], rounds: int, *, consume: int | None = 50) -> None:
        """`rounds` fault-free rounds for `members` (the tests' settling loop): time advances, each
        member gets its messages, renews its lease, rebalances and (unless None) consumes `consume`."""
        for _ in range(rounds):
            self.model.advance(ROUND_MS)
            for m in members:
                self.model.deliver(m.client)
                m.renew_lease()
                m.rebalance()
                if consume is not None:
                    m.consume(consume)

    def add_member(self, *, incremental: bool = True, transaction_max_bytes: int = 1 << 19) -> SimMember:
        """A new member; in a seeded run (`run()`) its mode and transaction size are drawn instead."""
        if self.vary_members:
            incremental = self.rng.random() < 0.5  # rebalance.incremental, per member as in a real group
            transaction_max_bytes = self.rng.choice([150, 300, 1 << 19])  # 1 or 2 creates per transaction, or all
        self._next_id += 1
        member = SimMember(
            f"m{self._next_id}",
            self.model,
            GROUP,
            TOPIC,
            self.rng.choice([1, 2]),
            self.log,
            # asking for more than the server's maxSessionTimeout: it negotiates down
            self.rng.choice([1, 2]) * self.o.session_timeout_ms,
            lambda m, d: self.check_delivery(m, d),
            on_bug=lambda what, exc: self.violation(f"bug in {what}: {exc!r}"),
            pause=self.pause,
            incremental=incremental,
            transaction_max_bytes=transaction_max_bytes,
            **self.member_options(),
        )
        self.members.append(member)
        self.note(f"join {member.name}")
        return member

    def member_options(self) -> dict[str, Any]:
        """More SimMember keywords for every member (a subclass's actors need them)."""
        return {}

    def foreign_sessions(self) -> set[int]:
        """Live sessions of actors that are not SimMembers (their owner nodes are theirs to account for)."""
        return set()

    def settle_round(self, round_: int) -> None:
        """Called at the start of each quiet round: a subclass's actors act."""

    # ---- the run ------------------------------------------------------------------------------------
    def run(self) -> Result:
        self.vary_members = True
        for _ in range(self.o.members):
            self.add_member()
        self.faulty = True
        for _ in range(self.o.steps):
            self.step()
            self.check_accounted()
            self.check_no_foreign_delivery()
            if self.result.violations:
                return self.finish()
        self.faulty = False
        self.settle()
        return self.finish()

    def live(self) -> list[SimMember]:
        return [m for m in self.members if m.alive]

    def step(self) -> None:
        rng, model = self.rng, self.model
        live = self.live()
        action = rng.choices(
            [
                "produce",
                "deliver",
                "rebalance",
                "consume",
                "commit",
                "lease",
                "health",
                "advance",
                "disconnect",
                "reconnect",
                "freeze",
                "thaw",
                "crash",
                "join",
                "leave",
                "add_partitions",
                "garble_peer",
                "drop_offsets",
                "operator",
                "scala_stale",
            ],
            [8, 10, 8, 10, 3, 4, 2, 6, 2, 3, 1, 2, 1, 1, 1, 1, 0.3, 0.3, 1, 1],
        )[0]
        member = rng.choice(live) if live else None
        if action == "produce":
            key = (TOPIC, rng.randrange(self.partitions))
            self.log.produce(key, rng.randint(1, 5))
        elif action == "advance":
            model.advance(rng.choice([100, 500, 1500, 3000, 5000]))
        elif action == "join" and len(live) < 6:
            self.add_member()
        elif action == "add_partitions" and self.partitions < 12:
            self.partitions += rng.randint(1, 2)
            self.admin.set(znodes.topic_path(TOPIC), self._topic_data())
            self.note(f"partitions -> {self.partitions}")
        elif action == "garble_peer":
            path = znodes.member_path(GROUP, f"{GROUP}_garbled{rng.randrange(3)}")
            if not model.exists(path):
                bad = rng.choice(
                    [
                        b'{"version":1,"subscription":{"t":0},"pattern":"static","timestamp":"1"}',
                        b'{"version":1,"subscription":{"[a-z&&[^x]].*":1},"pattern":"white_list","timestamp":"1"}',
                    ]
                )
                self.admin.create(path, bad, makepath=True)
                self.note(f"garbled peer {path}")
        elif action == "drop_offsets":
            folder = znodes.offsets_path(GROUP, TOPIC)
            if model.exists(folder):
                for child in model.children(folder):
                    self.admin.delete(f"{folder}/{child}")
                self.admin.delete(folder)
                self.offsets_dropped = True
                self.note(f"deleted {folder}")
        elif action == "operator":
            self.operator()
        elif action == "scala_stale":
            self.scala_stale()
        elif member is not None:
            self.member_action(action, member)

    # ---- actors that meddle with the group's nodes --------------------------------------------------
    def _hearing(self) -> list[SimMember]:
        return [m for m in self.live() if m.client.connected and not m.frozen]

    def _may_hit(self, path: str) -> bool:
        """An owner node whose holder can hear of the change (SimMember.hears_of_owner_nodes; see
        the module docstring)."""
        if not self.model.exists(path):
            return False
        owner = self.model.stat(path).ephemeralOwner
        return any(
            m.client._session is not None and m.client._session.id == owner and m.hears_of_owner_nodes(path)
            for m in self.live()
        )

    def _notify(self) -> None:
        for m in self._hearing():
            self.model.deliver(m.client)

    def operator(self) -> None:
        """An operator or a tool: deletes or rewrites an owner node, a fence node or a registration."""
        owners_folder = znodes.owners_path(GROUP, TOPIC)
        fences_folder = znodes.zkconsumer_sessions_path(GROUP)
        kind = self.rng.choice(["delete owner", "rewrite owner", "delete fence", "rewrite fence", "delete member"])
        if kind.endswith("owner"):
            folder = owners_folder
        elif kind.endswith("fence"):
            folder = fences_folder
        else:
            folder = znodes.ids_path(GROUP)
        children = sorted(self.model.children(folder)) if self.model.exists(folder) else []
        paths = [f"{folder}/{c}" for c in children if folder != owners_folder or self._may_hit(f"{folder}/{c}")]
        if not paths:
            return
        path = self.rng.choice(paths)
        if kind.startswith("delete"):
            self.admin.delete(path)
        else:
            thread = self.rng.choice([f"{GROUP}_{m.name}-0" for m in self.members] + ["garbage"])
            self.admin.set(path, znodes.encode_owner(thread) if folder == owners_folder else b"edited")
        self.note(f"operator: {kind} {path}")
        self._notify()

    def scala_stale(self) -> None:
        """A Scala member whose topic registry is stale: it once saw these owner paths as its own and
        now releases them by deleting the paths, whoever holds them, with no data or version check."""
        folder = znodes.owners_path(GROUP, TOPIC)
        if not self.stale_registry:
            children = sorted(self.model.children(folder)) if self.model.exists(folder) else []
            self.stale_registry = [f"{folder}/{c}" for c in children if self.rng.random() < 0.5]
            return
        hit = [path for path in self.stale_registry if self._may_hit(path)]
        for path in hit:
            self.admin.delete(path)
        self.stale_registry = []
        if hit:
            self.note(f"stale Scala member deleted {', '.join(hit)}")
            self._notify()

    def member_action(self, action: str, m: SimMember) -> None:
        model = self.model
        if m.frozen and action != "thaw":
            return
        if action == "deliver":
            model.deliver(m.client)
        elif action == "rebalance":
            m.rebalance()
        elif action == "consume":
            m.consume(self.rng.randint(1, 6))
        elif action == "commit":
            m.commit()
        elif action == "lease":
            m.renew_lease()
        elif action == "health":
            m.check_health()
        elif action == "disconnect" and m.client.connected:
            model.disconnect(m.client)
            self.note(f"disconnect {m.name}")
        elif action == "reconnect" and not m.client.connected:
            model.reconnect(m.client)
            self.note(f"reconnect {m.name}")
        elif action == "freeze":
            model.freeze(m.client)
            m.frozen = True
            self.note(f"freeze {m.name}")
        elif action == "thaw" and m.frozen:
            model.thaw(m.client)
            m.frozen = False
            self.note(f"thaw {m.name}")
        elif action == "crash":
            model.crash(m.client)
            m.alive = False
            self.note(f"crash {m.name}")
        elif action == "leave":
            m.leave()
            self.note(f"leave {m.name}")

    # ---- invariants -------------------------------------------------------------------------------------
    def check_delivery(self, member: SimMember, d: Delivery) -> None:
        """Invariants 1 and 2, at the moment a message is handed out."""
        self.deliveries.append(d)
        node = owner_nodes(self.model, GROUP, d.key[0]).get(d.key[1])
        where = f"{d.key[0]}-{d.key[1]}@{d.offset}"
        if node is None or node[1] != member.group.session or node[1] not in self.model.live_sessions():
            self.violation(
                f"{d.member} delivered {where} without owning it (owner node {node}, "
                f"registered session {member.group.session})"
            )
        elif not d.thread.startswith(f"{TOPIC}/") or node[0] != d.thread[len(TOPIC) + 1 :]:
            self.violation(f"{d.member} delivered {where} from stream {d.thread}, owner node says {node[0]}")
        done = committed(self.model, GROUP, d.key)
        if done is not None and d.offset < done:
            self.violation(f"{d.member} re-delivered {where} below committed offset {done}")

    def check_no_foreign_delivery(self) -> None:
        """Invariant 6, between steps: no partition is deliverable by a member that has heard of
        everything while its owner node is not that member's."""
        nodes = owner_nodes(self.model, GROUP, TOPIC)
        sessions = self.model.live_sessions()
        for m in self._hearing():
            if self.model.pending_events(m.client) or not m.streams.gate.usable():
                continue
            for key, info in sorted(m.assignment.owned_infos().items()):
                node = nodes.get(key[1]) if key[0] == TOPIC else None
                mine = (info.thread_id, m.group.session)
                if info.active and (node is None or node != mine or node[1] not in sessions):
                    self.violation(
                        f"{m.name} may deliver {key[0]}-{key[1]} (active, gate open) while its owner node is "
                        f"{node}, not {mine}"
                    )

    def check_accounted(self) -> None:
        """Invariant 3, between steps: every owner node belongs to the live session of a member that
        holds its partition as owned, releasing or orphan."""
        sessions = self.model.live_sessions()
        members = {m.client.name: m for m in self.members}
        foreign = self.foreign_sessions()
        for p, (thread, owner) in sorted(owner_nodes(self.model, GROUP, TOPIC).items()):
            if owner in foreign:
                continue
            member = members.get(sessions.get(owner, ""))
            if member is None:
                self.violation(f"owner node {TOPIC}-{p} ({thread}) belongs to session {owner:#x} of no member")
            elif (TOPIC, p) not in member.tracked():
                self.violation(
                    f"owner node {TOPIC}-{p} ({thread}) of {member.name}'s session {owner:#x} is neither owned, "
                    f"releasing nor an orphan of {member.name} (registered session {member.group.session or 0:#x}): "
                    "nobody will delete it"
                )

    def expected_owners(self) -> dict[int, str]:
        live = [m for m in self.members if m.alive]
        consumers = sorted(t for m in live for t in m.thread_ids())
        inp = AssignmentInput(
            consumers_for_topic={TOPIC: consumers} if consumers else {},
            partitions_for_topic={TOPIC: list(range(self.partitions))},
        )
        return {p: thread for (_, p), thread in assign("range", inp, DEFAULT).items()}

    def settle(self) -> None:
        """Faults stop: links come back, frozen members wake, dead sessions time out; then, with no
        watchdog, it must converge within the liveness bound."""
        self.note("faults stop")
        if not self.live():
            self.add_member()  # somebody must be left to consume
        for m in self.members:
            if m.frozen:
                self.model.thaw(m.client)
                m.frozen = False
            if m.alive and not m.client.connected:
                self.model.reconnect(m.client)
        began = self.model.now_ms
        for round_ in range(self.o.settle_rounds):
            self.model.advance(ROUND_MS)
            self.settle_round(round_)
            for m in self.live():
                self.model.deliver(m.client)
                m.renew_lease()
                m.rebalance()
                m.consume(50)
                if round_ % 4 == 3:
                    m.commit()
            self.check_accounted()
            self.check_no_foreign_delivery()
            if self.result.violations:
                return
            if round_ > 8 and self.converged():
                self.result.settled_ms = self.model.now_ms - began
                if self.result.settled_ms > self.o.liveness_bound_ms:
                    self.violation(
                        f"settled only {self.result.settled_ms} ms after faults stopped "
                        f"(bound {self.o.liveness_bound_ms} ms)"
                    )
                return
        self.violation(
            f"no convergence {self.model.now_ms - began} ms after faults stopped (no watchdog): " + self.describe()
        )

    def converged(self) -> bool:
        owners = {p: thread for p, (thread, _) in owner_nodes(self.model, GROUP, TOPIC).items()}
        if owners != self.expected_owners() or any(m.pending or m.retrying for m in self.live()):
            return False
        delivered = {(d.key, d.offset) for d in self.deliveries}
        for p in range(self.partitions):
            key = (TOPIC, p)
            end = self.log.end(key)
            if any((key, o) not in delivered for o in range(end)):
                return False
            done = committed(self.model, GROUP, key)
            # An operator's deletion of the offsets folder leaves unchanged partitions without a node
            # until their next commit with progress: only then is "missing" acceptable.
            if end and done != end and not (done is None and self.offsets_dropped):
                return False
        return True

    def describe(self) -> str:
        owners = {p: thread for p, (thread, _) in owner_nodes(self.model, GROUP, TOPIC).items()}
        delivered = {(d.key, d.offset) for d in self.deliveries}
        missing = {
            p: [o for o in range(self.log.end((TOPIC, p))) if ((TOPIC, p), o) not in delivered][:5]
            for p in range(self.partitions)
        }
        return (
            f"owners {owners} expected {self.expected_owners()}; pending "
            f"{ {m.name: m.pending for m in self.live()} }; undelivered { ({p: o for p, o in missing.items() if o}) }; "
            f"committed { {p: committed(self.model, GROUP, (TOPIC, p)) for p in range(self.partitions)} } "
            f"ends { {p: self.log.end((TOPIC, p)) for p in range(self.partitions)} }"
        )

    def finish(self) -> Result:
        self.result.delivered = len(self.deliveries)
        self.result.produced = sum(self.log.ends.values())
        return self.result


def shrink(seed: int, options: Options | None = None, kind: type[Schedule] | None = None) -> Result:
    """The shortest prefix of a failing schedule that still fails (same seed, fewer fault steps),
    so its trace is short enough to read. Returns the original result if no prefix fails. `kind`:
    the Schedule class that failed (a subclass adds actors)."""
    options = options or Options()
    kind = kind or Schedule
    for steps in range(1, options.steps + 1):
        result = kind(seed, Options(**{**options.__dict__, "steps": steps})).run()
        if result.violations:
            return result
    return kind(seed, options).run()


def run_many(first_seed: int, count: int, options: Options | None = None) -> tuple[int, list[Result]]:
    """Run `count` schedules from `first_seed`; returns (schedules run, failing results)."""
    failures = []
    for seed in range(first_seed, first_seed + count):
        result = Schedule(seed, options).run()
        if result.violations:
            failures.append(result)
    return count, failures
