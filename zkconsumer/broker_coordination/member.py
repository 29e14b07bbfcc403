"""BrokerGroupMember: a member of the brokers' group (confluent-kafka subscribe()) feeding the connector's streams."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from zkconsumer.broker_coordination.held import HeldChunks
from zkconsumer.broker_coordination.poll_commands import PollCommands
from zkconsumer.broker_coordination.settings import TOPIC_REFRESH_MS, consumer_settings, managed_overrides, place
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.fetcher.runs import split_runs
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import StaticSubscription, Subscription, WildcardSubscription
from zkconsumer.errors import BrokersUnavailable, CommitFailed, ConsumerError
from zkconsumer.metrics import Snapshot

log = logging.getLogger("zkconsumer.connector")  # the connector's logger: these lines are the connector's

POLL_S = 0.05  # longest consume(): how late a command (a commit, the stop) or a resume is served
BATCH = 10_000  # messages per consume()
TOPIC_REFRESH_S = TOPIC_REFRESH_MS / 1000.0  # a wildcard subscription looks for new topics this often
ERROR_LOG_S = 30.0
Key = tuple[str, int]


class BrokerGroupMember:
    """A connector's member when zkconsumer.coordination=broker.

    One thread (`<consumer id>-broker-poll`) owns the Consumer: it subscribes, runs the rebalance
    callbacks, consumes and routes chunks into the streams' queues, serves commits asked by other
    threads, auto-commits, and closes the Consumer. A revoked partition stops being delivered at
    once (the iterator's chunk is halted), and with auto.commit.enable what was delivered of it is
    committed before the brokers may give it to another member (the callback runs before the rebalance completes).
    """

    def __init__(
        self,
        config: ConsumerConfig,
        consumer_id: str,
        subscription: Subscription,
        streams: StreamSet,
        listener: ConsumerRebalanceListener,
        *,
        bootstrap_servers: str,
        on_failure: Callable[[BaseException], None],
    ) -> None:
        for key in managed_overrides(config):
            log.warning("ignoring librdkafka.%s: zkconsumer manages it", key)
        self.config = config
        self.consumer_id = consumer_id
        self.subscription = subscription
        self.streams = streams
        self.listener = listener
        self._settings = consumer_settings(config, bootstrap_servers)
        self._on_failure = on_failure
        self._infos: dict[Key, PartitionTopicInfo] = {}  # written by the poll thread only
        self._stream_of: dict[Key, int] = {}
        self._shared: frozenset[int] = frozenset()
        self._held = HeldChunks()  # chunks a full queue refused
        self._commands = PollCommands()
        self._stopping = threading.Event()
        self._assigned = threading.Event()  # the first assignment came (maybe empty)
        self._closed = threading.Event()
        self._consumer: Any = None
        self._topics: list[str] = []
        self.failure: BaseException | None = None
        self._error_log: dict[int, tuple[float, int]] = {}  # error code -> (last logged, hidden since)
        self.commits = 0
        self.commit_failures = 0
        self.unwritten: dict[Key, int] = {}
        for stream in streams.all():
            stream.queue.on_space = self._space_callback(stream.queue)
        self._thread = threading.Thread(target=self._run, name=f"{consumer_id}-broker-poll", daemon=True)

    # ---- the caller's side ---------------------------------------------------------------------
    def start(self, timeout: float) -> None:
        """Join the brokers' group; return once the first assignment came (within `timeout`)."""
        self._thread.start()
        if not self._assigned.wait(timeout) or self.failure is not None:
            problem = self.failure or f"no assignment from the group coordinator within {timeout:.0f} s"
            raise BrokersUnavailable(f"{self.consumer_id}: joining group {self.config.group_id!r} failed: {problem}")

    def commit(self, timeout: float) -> int:
        """Commit every owned partition's consumed offset that changed; how many were written."""
        written = self._ask(self._commit_owned, timeout, "commit")
        return written if isinstance(written, int) else 0

    def owned(self) -> dict[Key, str]:
        return {key: info.thread_id for key, info in list(self._infos.items()) if info.active}

    def positions(self) -> dict[Key, int]:
        return {key: info.consumed_offset for key, info in list(self._infos.items()) if info.active}

    def snapshot(self) -> Snapshot:
        owned: dict[str, int] = {}
        for topic, _ in self.owned():
            owned[topic] = owned.get(topic, 0) + 1
        return Snapshot(
            owned=owned,
            queued_chunks={s.queue.name: len(s.queue) for s in self.streams.all()},
            kafka_commits=self.commits,
            commit_failures=self.commit_failures,
        )

    def stop(self, timeout: float) -> dict[Key, int]:
        """End the iterators, commit (auto.commit.enable), leave the group; within `timeout` seconds.
        Returns the offsets it could not commit."""
        deadline = time.monotonic() + timeout
        self.streams.close(max(0.1, timeout / 4))
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(max(0.1, deadline - time.monotonic()))
        if self._thread.is_alive():
            log.warning("%s: leaving the brokers' group did not finish within %.1f s", self.consumer_id, timeout)
            return {key: info.consumed_offset for key, info in list(self._infos.items()) if info.consumed_offset >= 0}
        return dict(self.unwritten)

    def _ask(self, call: Callable[[], object], timeout: float, what: str) -> object:
        if threading.current_thread() is self._thread:  # a listener calling back from a rebalance callback
            return call()
        if self._closed.is_set() or self._stopping.is_set():
            raise ConsumerError(f"{self.consumer_id}: cannot {what}: the member is shutting down")
        return self._commands.ask(call, timeout, f"{self.consumer_id}: {what} not done within {timeout:.1f} s")

    def _space_callback(self, target: StreamQueue) -> Callable[[], None]:
        """A reader took a chunk from a queue that refused one: offer it the chunks held for it now
        (no I/O; the poll thread resumes their partitions)."""

        def on_space() -> None:
            self._held.offer_to(target)

        return on_space

    # ---- the poll thread -----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._consumer = Consumer(self._settings, logger=log)
            self._subscribe(self._wanted_topics())
            next_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000.0
            next_refresh = time.monotonic() + TOPIC_REFRESH_S
            while not self._stopping.is_set():
                self._commands.serve()
                self._resume_ready()
                now = time.monotonic()
                if self.config.auto_commit_enable and now >= next_commit:
                    self._commit_quietly()
                    next_commit = now + self.config.auto_commit_interval_ms / 1000.0
                if isinstance(self.subscription, WildcardSubscription) and now >= next_refresh:
                    self._subscribe(self._wanted_topics())
                    next_refresh = now + TOPIC_REFRESH_S
                # what is queued, at once; else wait for one message (consume(n, t) waits for all n)
                messages = self._consumer.consume(BATCH, 0) or self._consumer.consume(1, POLL_S)
                if messages:
                    self._route(messages)
            self._leave()
        except BaseException as exc:  # a bug or a fatal librdkafka error: the connector leaves the group
            self.failure = exc
            self._assigned.set()
            self._on_failure(exc)
        finally:
            self._closed.set()
            self._commands.fail_all(lambda: ConsumerError(f"{self.consumer_id}: the member stopped"))

    def _wanted_topics(self) -> list[str]:
        sub = self.subscription
        if isinstance(sub, StaticSubscription):
            return [topic for topic, _ in sub.topic_counts]
        listed = self._consumer.list_topics(timeout=self.config.socket_timeout_ms / 1000.0 or 30.0)
        return sorted(
            t
            for t in listed.topics
            if sub.topic_filter.is_topic_allowed(
                t,
                exclude_internal=self.config.exclude_internal_topics,
                internal_topics=self.config.compat.internal_topics,
            )
        )

    def _subscribe(self, topics: list[str]) -> None:
        if topics == self._topics:
            return
        self._topics = topics
        if not topics:  # librdkafka refuses an empty subscription: an empty one is no subscription
            self._consumer.unsubscribe()
            self._assigned.set()
            return
        log.info("%s subscribes to %s in the brokers' group %s", self.consumer_id, topics, self.config.group_id)
        self._consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _resume_ready(self) -> None:
        keys = self._held.offer_all()
        live = [TopicPartition(t, p) for t, p in keys if (t, p) in self._infos]
        if live:
            self._consumer.resume(live)

    def _route(self, messages: list[Message]) -> None:
        for run in split_runs(messages, self._shared):
            first = run[0]
            error = first.error()
            if error is not None:
                self._on_error(error)
                continue
            key = (first.topic(), first.partition())
            info = self._infos.get(key)
            if info is None or not info.active:
                continue  # fetched before its revocation
            info.fetched_offset = run[-1].offset() + 1
            if self._held.add(key, Chunk(info, run)):
                self._consumer.pause([TopicPartition(*key)])

    def _on_error(self, error: KafkaError) -> None:
        """A fatal error ends the member (the connector leaves, iterators raise); the others (a broker
        down, a leader moving: librdkafka retries them) are logged once per code per 30 s."""
        if error.fatal():
            raise KafkaException(error)
        now = time.monotonic()
        code = error.code()
        last, hidden = self._error_log.get(code, (-ERROR_LOG_S, 0))
        if now - last < ERROR_LOG_S:
            self._error_log[code] = (last, hidden + 1)
            return
        self._error_log[code] = (now, 0)
        more = f" ({hidden} more like it since)" if hidden else ""
        log.warning("%s: %s%s", self.consumer_id, error, more)

    # ---- the rebalance callbacks (the poll thread, inside consume()) ---------------------------
    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        for topic in sorted({t for t, _ in keys}):
            new = [k for k in keys if k[0] == topic]
            streams = self._streams_for(topic)
            load: dict[int, int] = {}
            for key, index in self._stream_of.items():
                if self._shares_streams(key[0], topic):
                    load[index] = load.get(index, 0) + 1
            for key, index in place(new, load, len(streams)).items():
                thread_id = f"{self.consumer_id}-{index}"
                self._infos[key] = PartitionTopicInfo(key[0], key[1], thread_id, streams[index].queue, -1)
                self._stream_of[key] = index
        self._reshare()
        if keys:
            log.info("%s assigned %s", self.consumer_id, _names(keys))
            by_topic: dict[str, dict[int, str]] = {}
            for (t, p), info in self._infos.items():
                by_topic.setdefault(t, {})[p] = info.thread_id
            self.listener.before_starting_fetchers(self.consumer_id, by_topic)
        self._assigned.set()

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions if (tp.topic, tp.partition) in self._infos]
        if not keys:
            return
        by_topic: dict[str, set[int]] = {}
        for t, p in keys:
            by_topic.setdefault(t, set()).add(p)
        try:
            self.listener.before_releasing_partitions(by_topic)
        except Exception:  # the brokers' rebalance goes on regardless: say so, and still commit
            log.exception("%s: before_releasing_partitions failed", self.consumer_id)
        infos = [self._infos[k] for k in keys]
        for info in infos:
            info.active = False  # nothing more of it is handed out; its position is now exact
        try:
            if self.config.auto_commit_enable:  # as ZooKeeper mode's release: without it the application commits
                self._commit(infos)
        except Exception as exc:  # the next owner starts from the last commit: duplicates, never loss
            log.warning("%s: committing revoked %s failed: %s", self.consumer_id, _names(keys), exc)
        self._forget(keys)
        log.info("%s revoked %s", self.consumer_id, _names(keys))

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions if (tp.topic, tp.partition) in self._infos]
        for key in keys:
            self._infos[key].active = False
        self._forget(keys)
        if keys:
            log.warning("%s lost %s (the brokers ended our membership): not committed", self.consumer_id, _names(keys))

    def _forget(self, keys: Iterable[Key]) -> None:
        keys = list(keys)
        paused = self._held.forget(keys)
        if paused:
            self._consumer.resume([TopicPartition(t, p) for t, p in paused])
        for key in keys:
            self._infos.pop(key, None)
            self._stream_of.pop(key, None)
        self._reshare()

    def _reshare(self) -> None:
        counts: dict[int, int] = {}
        for _, p in self._infos:
            counts[p] = counts.get(p, 0) + 1
        self._shared = frozenset(p for p, n in counts.items() if n > 1)

    def _streams_for(self, topic: str) -> list[Any]:
        return self.streams.wildcard if self.streams.wildcard else self.streams.by_topic[topic]

    def _shares_streams(self, a: str, b: str) -> bool:
        return bool(self.streams.wildcard) or a == b

    # ---- commits and leaving -------------------------------------------------------------------
    def _commit_owned(self) -> int:
        return self._commit([i for i in self._infos.values() if i.active])

    def _commit(self, infos: Iterable[PartitionTopicInfo]) -> int:
        todo = [(i, i.consumed_offset) for i in infos]
        todo = [(i, offset) for i, offset in todo if offset >= 0 and offset != i.committed_offset]
        if not todo:
            return 0
        offsets = [TopicPartition(i.topic, i.partition, offset) for i, offset in todo]
        try:
            answer = self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self.commit_failures += 1
            raise CommitFailed(f"{self.consumer_id}: commit to Kafka failed: {exc}", [i.key for i, _ in todo]) from exc
        failed = [tp for tp in answer or [] if tp.error is not None]
        if failed:
            self.commit_failures += 1
            names = ", ".join(f"{tp.topic}-{tp.partition}: {tp.error}" for tp in failed)
            raise CommitFailed(
                f"{self.consumer_id}: commit to Kafka failed for {names}", [(tp.topic, tp.partition) for tp in failed]
            )
        for info, offset in todo:
            info.committed_offset = offset
        self.commits += 1
        return len(todo)

    def _commit_quietly(self) -> None:
        try:
            self._commit_owned()
        except CommitFailed as exc:  # the next auto-commit tries again
            log.warning("%s", exc)

    def _leave(self) -> None:
        infos = list(self._infos.values())
        for info in infos:
            info.active = False
        if self.config.auto_commit_enable:
            try:
                self._commit(infos)
            except CommitFailed as exc:
                log.warning("%s", exc)
                self.unwritten = {i.key: i.consumed_offset for i in infos if i.consumed_offset != i.committed_offset}
        self._forget(list(self._infos))  # so the revocation inside close() neither commits nor calls the listener
        self._consumer.close()  # leaves the group


def _names(keys: Iterable[Key]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(keys))
