"""The fetcher: one confluent-kafka Consumer on one thread (or a reader's), routing fetched messages into stream queues."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.fetcher.commands import ConsumerProxy, FetchCommands
from zkconsumer.consumer.fetcher.kafka_consumer import ConsumerHandle, FetchErrors
from zkconsumer.consumer.fetcher.offset_reset import OffsetResets
from zkconsumer.consumer.fetcher.routing import ChunkRouter
from zkconsumer.consumer.fetcher.settings import FetchSettings
from zkconsumer.consumer.fetcher.turns import BUSY_WAIT, IDLE_WAIT, POLL_TIMEOUT, READER_GRACE, ReaderTurns
from zkconsumer.errors import ConsumerError
from zkconsumer.zookeeper.deadline import Deadline

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the package's name: its modules share the logger

Key = tuple[str, int]
T = TypeVar("T")

_HELD_POLL_TIMEOUT = 0.01  # while some partitions wait for queue space, notice that space soon
_HELD_RECHECK = 1.0  # the fetcher thread offers held chunks again at least this often
_COMMAND_TIMEOUT = 60.0
_UNKNOWN_PARTITION_RETRY = 0.2  # as the legacy leader finder's refresh.leader.backoff.ms: a new partition's wait


class Fetcher:
    """Fetch owned partitions with one Consumer; route them, one chunk per partition and batch, into queues.

    Whoever calls the Consumer or touches the routing state holds the turn (ReaderTurns): the
    fetcher thread, or (with `reader_turns`) a reader whose queue is empty, which then fetches on
    its own thread (`fetch_for`). A reader that keeps up thus fetches and iterates in one thread,
    without handing every chunk to another thread (two threads taking turns on the GIL cost
    throughput: docs/performance.md); the fetcher thread fetches only when no reader has for
    `READER_GRACE` (readers busy or absent), and runs the commands other threads post (a reader's
    fetch leaves them to it). A refused chunk is held (and grows); at `batch_size` held messages or
    `hold_bytes` of values (default: queued.max.message.chunks x fetch.message.max.bytes) its
    partition is paused. A pause costs a re-fetch (librdkafka drops the partition's prefetch), so
    the bounds let a stream that keeps up never pause.

    Its parts, each owning its state: the Consumer (kafka_consumer.ConsumerHandle: made, made anew
    for a re-created topic, closed), the turn (turns.ReaderTurns), the routing state
    (routing.ChunkRouter), auto.offset.reset (offset_reset.OffsetResets) and librdkafka's
    errors (kafka_consumer.FetchErrors), the commands other threads post (commands.FetchCommands).
    This class keeps the fetcher thread, the two fetch loops (`_run`, `fetch_for`), the assignment
    commands and stopping.
    """

    def __init__(
        self,
        settings: FetchSettings,
        *,
        name: str,
        on_error: Callable[[BaseException], None],
        batch_size: int = 10_000,
        hold_bytes: int | None = None,
        reader_turns: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.settings = settings
        self.name = name
        self._on_error = on_error
        self._batch_size = batch_size
        self._router = ChunkRouter(
            hold_messages=batch_size,
            hold_bytes=(
                settings.queued_max_message_chunks * settings.fetch_message_max_bytes
                if hold_bytes is None
                else hold_bytes
            ),
        )
        self._turns = ReaderTurns(name, enabled=reader_turns, on_abandoned=self._router.mark_stale)
        self._errors = FetchErrors(name)
        self._resets = OffsetResets(settings, self._router, self._errors.warn)
        self._kafka = ConsumerHandle(settings, name, self._errors, self._turns.turn)  # opened by start()
        self._proxy = ConsumerProxy(lambda: self._kafka.raw, lambda fn: self._call(fn, required=False))
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._commands = FetchCommands(self._wake)
        self._stopping = False
        self._failure: BaseException | None = None
        self.deadline = Deadline(None)  # a shutdown's: bounds every command posted from now on

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"fetcher {self.name} already started")
        self._kafka.open()
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-fetcher", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread, then close the Consumer. Idempotent; safe from any thread."""
        self._stopping = True  # a thread outliving the join closes the Consumer itself
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s did not stop within %.1fs", thread.name, timeout)
        if thread is None or not thread.is_alive():
            self._kafka.close(self.deadline)

    @property
    def consumer(self) -> ConsumerProxy:
        """The Consumer for offset commits/lookups; each call runs on the fetcher thread."""
        if self._thread is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        return self._proxy

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Replace the whole assignment; each partition is fetched from its `fetched_offset`."""
        infos = _unique(infos)
        self._until_known(lambda: self._call(lambda: self._do_assign(infos), required=bool(infos)))

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Start fetching more partitions (an already assigned one restarts at its fetched_offset)."""
        infos = _unique(infos)
        if infos:
            self._until_known(lambda: self._call(lambda: self._do_add(infos)))

    def _until_known(self, command: Callable[[], None]) -> None:
        """Run an assignment command, again while a partition without an offset is one the brokers
        do not know yet, for up to the fetcher's request timeout (socket.timeout.ms, >= 1 s).

        A partition added to a topic is written to the topic node (whose watch starts our rebalance)
        before the controller has the brokers create it, so its start (auto.offset.reset) may be
        asked of brokers that cannot answer for a moment. Failing the attempt there left the new
        partitions waiting out rebalance.backoff.ms. The command fails whole before it assigns
        anything, and each try refreshes librdkafka's metadata of the topic (offset_reset.watermarks);
        the waits are taken outside the fetcher's turn, so the other partitions go on fetching."""
        deadline = time.monotonic() + self._resets.timeout
        while True:
            try:
                command()
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if (
                    not isinstance(err, KafkaError)
                    or err.code() != KafkaError._UNKNOWN_PARTITION
                    or self._stopping
                    or self.deadline.remaining(deadline - time.monotonic()) < _UNKNOWN_PARTITION_RETRY
                ):
                    raise
            time.sleep(_UNKNOWN_PARTITION_RETRY)

    def remove(self, keys: Iterable[Key]) -> None:
        """Stop fetching these (topic, partition)s and drop what is held of them."""
        keys = list(keys)
        if keys:
            self._call(lambda: self._do_remove(keys), required=False)

    def stop_fetching(self) -> None:
        """Unassign everything and drop held messages (a no-op on a stopped fetcher)."""
        self._call(lambda: self._do_assign([]), required=False)

    def assigned(self) -> set[Key]:
        """What librdkafka currently has assigned (empty once closed)."""
        # On the fetcher thread, as every Consumer call: called from another thread while the
        # fetcher thread looped on consume(), it never returned (confluent-kafka 2.16.1).
        return self._call(
            lambda: set() if self._kafka.closed else {(tp.topic, tp.partition) for tp in self._kafka.raw.assignment()},
            required=False,
        )

    def lag(self) -> dict[Key, int]:
        """high watermark - fetched offset per partition, from cached watermarks (best effort)."""

        def read() -> dict[Key, int]:
            try:
                marks = (
                    {}
                    if self._kafka.closed
                    else {
                        key: (info, self._kafka.raw.get_watermark_offsets(TopicPartition(*key), cached=True))
                        for key, info in self._router.infos.items()
                    }
                )
            except KafkaException:
                return {}
            return {key: max(0, m[1] - info.fetched_offset) for key, (info, m) in marks.items() if m and m[1] >= 0}

        return self._call(read, required=False)

    def set_deadline(self, deadline: Deadline) -> None:
        """Bound every command posted from now on (and so every Consumer call of another thread) by `deadline`."""
        self.deadline = deadline

    def _call(self, fn: Callable[[], T], *, required: bool = True) -> T:
        """Run `fn` on the fetcher thread and return its result. Once the thread is gone, `required`
        calls raise ConsumerError; the others (removals, reads, proxy calls) run right here."""
        thread = self._thread
        if thread is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        if thread is threading.current_thread() or self._turns.turn.holder == threading.get_ident():
            return fn()
        if thread.is_alive() and not self._stopping and self._failure is None:
            fut = self._commands.post(fn)
            if self._commands.wait(fut, thread, self.deadline.remaining(_COMMAND_TIMEOUT)):
                try:
                    return fut.result()
                except KafkaException as exc:
                    explained = self._errors.explain(exc)
                    if explained is exc:
                        raise
                    raise explained from exc
        if required:
            raise ConsumerError(f"fetcher {self.name} is not running") from self._failure
        if self._failure is None:  # stopping: let it leave the Consumer first (a failed one did)
            thread.join(_COMMAND_TIMEOUT)
            if thread.is_alive():
                raise TimeoutError(f"{thread.name} did not stop within {_COMMAND_TIMEOUT:.0f}s")
        turn, me = self._turns.turn, threading.get_ident()
        try:
            if not turn.take(me, _COMMAND_TIMEOUT) and not turn.take_over(me):
                raise TimeoutError(f"fetcher {self.name}: the consumer stayed busy for {_COMMAND_TIMEOUT:.0f}s")
            return fn()
        finally:
            if turn.holder == me:  # inline, no call before the release: see turns.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()

    def fetch_for(self, stream_queue: StreamQueue, timeout: float) -> float:
        """A reader found `stream_queue` empty: fetch on its thread if the Consumer is free (StreamQueue.refill).

        Returns 0 after a fetch, else how long the reader should wait for chunks another thread's
        fetch may bring. A KafkaException (a fatal librdkafka error) ends fetching for good
        (on_error). Anything else (a KeyboardInterrupt, an exception a signal handler raised, a
        bug) reaches the reader, and the next turn rebuilds the routing state (ChunkRouter.refetch).
        """
        if self._stopping or self._kafka.closed or self._failure is not None:
            return IDLE_WAIT  # close() or fail() ends the queue soon
        self._turns.reader_asks()  # the fetcher thread leaves the next fetch to us
        if self._commands.pending():
            return BUSY_WAIT  # the fetcher thread runs the commands first
        turn, router, me = self._turns.turn, self._router, threading.get_ident()
        try:
            if not turn.try_take(me):
                return BUSY_WAIT
            if self._stopping or self._kafka.closed or self._failure is not None:
                return IDLE_WAIT
            if router.stale:
                router.refetch(self._kafka.raw)
            if router.retry:
                router.offer_held(self._kafka.raw)
                if len(stream_queue):
                    return 0.0
            if not router.fetchable():
                return IDLE_WAIT
            messages = self._kafka.take(self._batch_size, timeout)
            if messages:
                self._route(messages)
            return 0.0
        except KafkaException as exc:
            self._fail(exc)
            return IDLE_WAIT
        except BaseException:
            router.mark_stale()
            raise
        finally:
            if turn.holder == me:  # inline, no call before the release: see turns.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()
            if self._stopping and not self._kafka.closed:
                self._kafka.close(self.deadline, 0.0)  # close() gave up waiting for this fetch

    def _route(self, messages: list[Message]) -> None:
        """Queue a consume() batch (ChunkRouter.route), then handle its error messages, if any."""
        for m in self._router.route(messages, self._kafka.raw):
            reset = self._errors.on_message_error(m)
            if reset is not None:
                self._resets.reset_out_of_range(self._kafka.raw, *reset)

    def _on_space(self) -> None:  # queue.on_space: runs on application threads, so only flag and wake
        self._router.retry = True  # a hint: the fetcher thread also offers held chunks now and then
        # A reader that fetches offers them in its next fetch; without one, wake the fetcher thread.
        if not self._turns.enabled or time.monotonic() - self._turns.reader_asked >= READER_GRACE:
            self._wake.set()

    def _run(self) -> None:
        batch, wake, turns, router = self._batch_size, self._wake, self._turns, self._router
        turn, me = turns.turn, threading.get_ident()
        try:
            while not self._stopping and self._failure is None:
                wake.clear()
                readers_fetch = turns.readers_fetch()
                held_due = bool(router.held) and time.monotonic() - router.retried_at >= _HELD_RECHECK
                if readers_fetch and not (self._commands.pending() or held_due or router.stale or turn.unnamed()):
                    turns.leave_to_readers()
                    wake.wait(READER_GRACE)  # leave the Consumer to them: taking it makes a reader wait
                    continue
                if not turns.poll():
                    continue  # a reader is fetching
                try:
                    if self._stopping or self._failure is not None:
                        break
                    if router.stale:
                        router.refetch(self._kafka.raw)
                    if self._commands.pending():
                        self._commands.run_all()
                    if (router.retry and not readers_fetch) or held_due:
                        # On a hint from a queue (on_space) when no reader fetches (a reader's fetch
                        # offers them), and now and then: a hint a signal cut short is not lost.
                        router.offer_held(self._kafka.raw)
                    fetchable = router.fetchable()
                    mine = fetchable and not readers_fetch
                    if mine:
                        messages = self._kafka.take(batch, _HELD_POLL_TIMEOUT if router.paused else POLL_TIMEOUT)
                        if messages:
                            self._route(messages)
                finally:
                    turn.give_back(me)
                if not mine:  # nothing fetchable, or readers fetch: sleep until a command or queue space
                    wake.wait(READER_GRACE if fetchable else IDLE_WAIT)
        except BaseException as exc:  # noqa: BLE001 - report anything that kills the thread
            self._fail(exc)
        finally:
            self._commands.cancel_all()  # stopped or failed: release waiting callers
            if self._stopping:
                self._kafka.close(self.deadline)

    def _fail(self, exc: BaseException) -> None:
        """Fetching failed for good (on the fetcher thread, or a reader's): cancel what waits, tell on_error."""
        if self._failure is not None:
            return
        self._failure = exc
        log.error("%s: fetching failed", self.name, exc_info=exc)
        self._wake.set()  # the fetcher thread ends
        self._commands.cancel_all()  # release waiting callers before on_error runs
        try:
            self._on_error(exc)
        except Exception:  # noqa: BLE001
            log.exception("%s: on_error callback failed", self.name)

    def _do_assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        router = self._router
        if self._kafka.closed:  # stop_fetching() after close(): nothing to undo
            router.clear()
            return
        self._renew_for(infos)
        self._resets.resolve(self._kafka.raw, infos)
        router.forget(list(router.infos), self._kafka.raw)
        if infos:
            self._kafka.raw.assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        else:
            self._kafka.raw.unassign()
        router.set_infos({i.key: i for i in infos})
        self._attach_queues(infos)

    def _do_add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        router = self._router
        self._renew_for(infos)
        self._resets.resolve(self._kafka.raw, infos)
        self._do_remove([i.key for i in infos if i.key in router.infos])
        self._kafka.raw.incremental_assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        router.set_infos({**router.infos, **{i.key: i for i in infos}})
        self._attach_queues(infos)

    def _renew_for(self, infos: Sequence[PartitionTopicInfo]) -> None:
        if self._kafka.renew_for(infos):  # a re-created topic: the others go on from what is not queued
            self._router.refetch(self._kafka.raw)

    def _attach_queues(self, infos: Sequence[PartitionTopicInfo]) -> None:
        for stream_queue in {id(i.queue): i.queue for i in infos}.values():
            stream_queue.on_space = self._on_space
            if self._turns.enabled and stream_queue.refill is None:
                stream_queue.set_refill(self.fetch_for)

    def _do_remove(self, keys: Iterable[Key]) -> None:
        router = self._router
        gone = [k for k in dict.fromkeys(keys) if k in router.infos]
        if gone and not self._kafka.closed:
            router.forget(gone, self._kafka.raw)
            self._kafka.raw.incremental_unassign([TopicPartition(*k) for k in gone])
            router.set_infos({k: v for k, v in router.infos.items() if k not in gone})


def _unique(infos: Iterable[PartitionTopicInfo]) -> list[PartitionTopicInfo]:
    infos = list(infos)
    if len({i.key for i in infos}) != len(infos):
        raise ValueError("the same partition appears twice")
    return infos
