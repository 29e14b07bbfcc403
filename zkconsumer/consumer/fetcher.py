"""The fetcher: one confluent-kafka Consumer on one thread, routing fetched messages into stream queues."""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar, cast

from confluent_kafka import Consumer, KafkaException, TopicPartition

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo
from zkconsumer.consumer.consumer_proxy import ConsumerProxy
from zkconsumer.consumer.fetch_errors import FetchErrors
from zkconsumer.consumer.fetch_routing import ChunkRouting
from zkconsumer.consumer.fetch_settings import FetchSettings
from zkconsumer.consumer.fetch_turns import IDLE_WAIT, POLL_TIMEOUT, READER_GRACE, ReaderTurns, Turn
from zkconsumer.consumer.log_throttle import throttled_logger
from zkconsumer.consumer.offset_reset import OffsetResets
from zkconsumer.errors import ConsumerError
from zkconsumer.zookeeper.client import Deadline

__all__ = ["ConsumerProxy", "FetchSettings", "Fetcher"]

log = logging.getLogger(__name__)

Key = tuple[str, int]
T = TypeVar("T")

_HELD_POLL_TIMEOUT = 0.01  # while some partitions wait for queue space, notice that space soon
_HELD_RECHECK = 1.0  # the fetcher thread offers held chunks again at least this often
_CLOSE_WAIT = 5.0  # how long close() waits for a reader's fetch to give the Consumer back
_COMMAND_TIMEOUT = 60.0


class Fetcher(ReaderTurns, ChunkRouting, OffsetResets, FetchErrors):
    """Fetch owned partitions with one Consumer; route them, one chunk per partition and batch, into queues.

    Whoever calls the Consumer or touches the routing state holds `_turn`: the fetcher thread, or
    (with `reader_turns`) a reader whose queue is empty, which then fetches on its own thread
    (`fetch_for`). A reader that keeps up thus fetches and iterates in one thread, without handing
    every chunk to another thread (two threads taking turns on the GIL cost ~20 % of the speed);
    the fetcher thread fetches only when no reader has for `READER_GRACE` (readers busy or absent),
    and runs the commands other threads post (a reader's fetch leaves them to it).
    A refused chunk is held (and grows); at `batch_size` held messages or `hold_bytes` of values
    (default: queued.max.message.chunks x fetch.message.max.bytes) its partition is paused. A pause
    costs a re-fetch (librdkafka drops the partition's prefetch), so the bounds let a stream that
    keeps up never pause: at 1,000 it paused 150 times per million messages, at 0.6x the speed.

    A reader's turn (fetch_turns.ReaderTurns), the routing (fetch_routing.ChunkRouting), the
    auto.offset.reset policy (offset_reset.OffsetResets) and librdkafka's errors
    (fetch_errors.FetchErrors) are its base classes, each in a module of its own; this class keeps
    the thread, the commands and closing.
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
        self._hold_bytes = (
            settings.queued_max_message_chunks * settings.fetch_message_max_bytes if hold_bytes is None else hold_bytes
        )
        self._raw: Consumer = None  # type: ignore[assignment]  # created by start()
        self._proxy = ConsumerProxy(lambda: self._raw, lambda fn: self._call(fn, required=False))
        self._thread: threading.Thread | None = None
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._retry = False  # set by queue.on_space from application threads
        self._retried_at = 0.0  # time.monotonic() of the fetcher thread's last offer of held chunks
        self._stopping = self._closed = False
        self._turn = Turn()  # held by whoever calls the Consumer or touches the routing state
        self._unowned_polls = 0  # the fetcher thread's failed turn polls in a row that saw no owner
        self._reader_turns = reader_turns
        self._reader_asked = -READER_GRACE  # time.monotonic() when a reader last wanted to fetch
        self._rewind = False  # a reader's fetch was cut short: refetch from the routed positions
        self._failure: BaseException | None = None
        self._infos: dict[Key, PartitionTopicInfo] = {}
        self._incarnations: dict[str, int] = {}  # topic -> the epoch (czxid) the Consumer fetched of it
        self._ever_assigned: set[Key] = set()
        self._shared_partitions: frozenset[int] = frozenset()  # numbers that 2+ topics have
        self._held: collections.OrderedDict[Key, list[Message]] = collections.OrderedDict()  # refused, in order
        self._held_bytes: dict[Key, int] = {}  # the sizes of their values
        self._paused: set[Key] = set()
        self._warned: dict[object, list[float]] = {}
        self._connection_error: tuple[float, str] | None = None  # when and why the brokers were unreachable
        self.deadline = Deadline(None)  # a shutdown's: bounds every command posted from now on

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"fetcher {self.name} already started")
        self._raw = self._new_consumer()
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-fetcher", daemon=True)
        self._thread.start()

    def _new_consumer(self) -> Consumer:
        conf = self.settings.consumer_config()
        conf.setdefault("error_cb", self._on_client_error)
        conf.setdefault("logger", throttled_logger(f"{__name__}.librdkafka"))
        return Consumer(conf)

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
            self._close_consumer()

    @property
    def consumer(self) -> ConsumerProxy:
        """The Consumer for offset commits/lookups; each call runs on the fetcher thread."""
        if self._thread is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        return self._proxy

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Replace the whole assignment; each partition is fetched from its `fetched_offset`."""
        infos = _unique(infos)
        self._call(lambda: self._do_assign(infos), required=bool(infos))

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Start fetching more partitions (an already assigned one restarts at its fetched_offset)."""
        infos = _unique(infos)
        if infos:
            self._call(lambda: self._do_add(infos))

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
            lambda: set() if self._closed else {(tp.topic, tp.partition) for tp in self._raw.assignment()},
            required=False,
        )

    def lag(self) -> dict[Key, int]:
        """high watermark - fetched offset per partition, from cached watermarks (best effort)."""

        def read() -> dict[Key, int]:
            try:
                marks = (
                    {}
                    if self._closed
                    else {
                        key: (info, self._raw.get_watermark_offsets(TopicPartition(*key), cached=True))
                        for key, info in self._infos.items()
                    }
                )
            except KafkaException:
                return {}
            return {key: max(0, m[1] - info.fetched_offset) for key, (info, m) in marks.items() if m and m[1] >= 0}

        return self._call(read, required=False)

    def _call(self, fn: Callable[[], T], *, required: bool = True) -> T:
        """Run `fn` on the fetcher thread and return its result. Once the thread is gone, `required`
        calls raise ConsumerError; the others (removals, reads, proxy calls) run right here."""
        thread = self._thread
        if thread is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        if thread is threading.current_thread() or self._turn.holder == threading.get_ident():
            return fn()
        if thread.is_alive() and not self._stopping and self._failure is None:
            fut: Future[T] = Future()
            self._commands.put((fn, fut))
            self._wake.set()
            limit = self.deadline.remaining(_COMMAND_TIMEOUT)
            deadline = time.monotonic() + limit
            while True:
                try:
                    return fut.result(timeout=min(0.2, limit))
                except KafkaException as exc:
                    explained = self.explain(exc)
                    if explained is exc:
                        raise
                    raise explained from exc
                except CancelledError:
                    break  # the thread failed before running it
                except FutureTimeout:
                    if fut.done():
                        raise  # fn's own TimeoutError
                    if not thread.is_alive() and fut.cancel():
                        break  # died before running it
                    if time.monotonic() >= deadline:
                        fut.cancel()  # not started yet: it must not run late (a cancelled add, say)
                        raise TimeoutError(f"{thread.name} did not run a command within {limit:.1f}s") from None
        if required:
            raise ConsumerError(f"fetcher {self.name} is not running") from self._failure
        if self._failure is None:  # stopping: let it leave the Consumer first (a failed one did)
            thread.join(_COMMAND_TIMEOUT)
            if thread.is_alive():
                raise TimeoutError(f"{thread.name} did not stop within {_COMMAND_TIMEOUT:.0f}s")
        turn, me = self._turn, threading.get_ident()
        try:
            if not turn.take(me, _COMMAND_TIMEOUT) and not turn.take_over(me):
                raise TimeoutError(f"fetcher {self.name}: the consumer stayed busy for {_COMMAND_TIMEOUT:.0f}s")
            return fn()
        finally:
            if turn.holder == me:  # inline, no call before the release: see fetch_turns.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()

    def _run(self) -> None:
        # consume() returns Messages typed with Optional topic/partition/offset; _route reads those
        # only after it has set error messages apart, so it takes them as chunks.Message.
        def consume(count: int, timeout: float) -> list[Message]:
            return cast("list[Message]", self._raw.consume(count, timeout))  # _raw: renewed by _renew_for

        batch, wake, turn, me = self._batch_size, self._wake, self._turn, threading.get_ident()
        try:
            while not self._stopping and self._failure is None:
                wake.clear()
                readers_fetch = self._reader_turns and time.monotonic() - self._reader_asked < READER_GRACE
                held_due = bool(self._held) and time.monotonic() - self._retried_at >= _HELD_RECHECK
                if readers_fetch and not (self._commands.qsize() or held_due or self._rewind or turn.unnamed()):
                    self._unowned_polls = 0
                    wake.wait(READER_GRACE)  # leave the Consumer to them: taking it makes a reader wait
                    continue
                if not self._poll_turn():
                    continue  # a reader is fetching
                try:
                    if self._stopping or self._failure is not None:
                        break
                    if self._rewind:
                        self._refetch()
                    if not self._commands.empty():
                        self._run_commands()
                    if (self._retry and not readers_fetch) or held_due:
                        # On a hint from a queue (on_space) when no reader fetches (a reader's fetch
                        # offers them), and now and then: a hint a signal cut short is not lost.
                        self._retry, self._retried_at = False, time.monotonic()
                        self._retry_held()
                    fetchable = len(self._infos) > len(self._paused)
                    mine = fetchable and not readers_fetch
                    if mine:
                        messages = consume(batch, _HELD_POLL_TIMEOUT if self._paused else POLL_TIMEOUT)
                        if messages:
                            self._route(messages)
                finally:
                    turn.give_back(me)
                if not mine:  # nothing fetchable, or readers fetch: sleep until a command or queue space
                    wake.wait(READER_GRACE if fetchable else IDLE_WAIT)
        except BaseException as exc:  # noqa: BLE001 - report anything that kills the thread
            self._fail(exc)
        finally:
            while not self._commands.empty():  # stopped or failed: release waiting callers
                self._commands.get()[1].cancel()
            if self._stopping:
                self._close_consumer()

    def _fail(self, exc: BaseException) -> None:
        """Fetching failed for good (on the fetcher thread, or a reader's): cancel what waits, tell on_error."""
        if self._failure is not None:
            return
        self._failure = exc
        log.error("%s: fetching failed", self.name, exc_info=exc)
        self._wake.set()  # the fetcher thread ends
        while not self._commands.empty():  # release waiting callers before on_error runs
            self._commands.get()[1].cancel()
        try:
            self._on_error(exc)
        except Exception:  # noqa: BLE001
            log.exception("%s: on_error callback failed", self.name)

    def _run_commands(self) -> None:
        while not self._commands.empty():  # only this thread takes from the queue
            fn, fut = self._commands.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - the caller gets it
                    fut.set_exception(exc)

    def _do_assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        if self._closed:  # stop_fetching() after close(): nothing to undo
            self._set_infos({})
            self._held, self._held_bytes, self._paused = collections.OrderedDict(), {}, set()
            return
        self._renew_for(infos)
        self._resolve_offsets(infos)
        self._forget(list(self._infos))
        if infos:
            self._raw.assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        else:
            self._raw.unassign()
        self._set_infos({i.key: i for i in infos})
        self._attach_queues(infos)

    def _do_add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        self._renew_for(infos)
        self._resolve_offsets(infos)
        self._do_remove([i.key for i in infos if i.key in self._infos])
        self._raw.incremental_assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        self._set_infos({**self._infos, **{i.key: i for i in infos}})
        self._attach_queues(infos)

    def _renew_for(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Fetch a re-created topic with a new Consumer. librdkafka keeps what it learnt of the old
        topic (its topic id, each partition's leader epoch, which a new topic restarts at 0) and may
        take the new topic's metadata for stale: the partition is assigned and never fetched
        (librdkafka #4898; seen in chaos runs as an owned partition delivering nothing for minutes).
        The other partitions go on from their first message not queued (`_refetch`)."""
        recreated = sorted(
            {i.topic for i in infos if i.epoch is not None and self._incarnations.get(i.topic, i.epoch) != i.epoch}
        )
        self._incarnations.update({i.topic: i.epoch for i in infos if i.epoch is not None})
        if not recreated or self._closed:
            return
        log.info("%s: topic %s was re-created; fetching with a new Consumer", self.name, ", ".join(recreated))
        old, self._raw = self._raw, self._new_consumer()
        try:
            old.close()
        except (KafkaException, RuntimeError) as exc:  # closing is best effort: the new one fetches
            log.warning("%s: closing the replaced Consumer failed: %s", self.name, exc)
        self._refetch()

    def _attach_queues(self, infos: Sequence[PartitionTopicInfo]) -> None:
        for stream_queue in {id(i.queue): i.queue for i in infos}.values():
            stream_queue.on_space = self._on_space
            if self._reader_turns and stream_queue.refill is None:
                stream_queue.set_refill(self.fetch_for)

    def _do_remove(self, keys: Iterable[Key]) -> None:
        gone = [k for k in dict.fromkeys(keys) if k in self._infos]
        if gone and not self._closed:
            self._forget(gone)
            self._raw.incremental_unassign([TopicPartition(*k) for k in gone])
            self._set_infos({k: v for k, v in self._infos.items() if k not in gone})

    def _close_consumer(self, wait: float = _CLOSE_WAIT) -> None:
        turn, me = self._turn, threading.get_ident()
        try:
            if not turn.take(me, self.deadline.remaining(wait)):
                if wait <= 0 or turn.holder is not None or not turn.take_over(me):
                    # A reader's fetch holds the Consumer; it closes it when it ends (fetch_for).
                    if wait > 0:
                        log.warning("%s: the consumer was still fetching; that fetch closes it", self.name)
                    return
                # Held by nobody all this while: left behind by an interrupted reader (see _poll_turn).
                log.warning("%s: a reader was interrupted holding the consumer; closing it anyway", self.name)
            if not self._closed and self._raw is not None:
                self._closed = True
                self._raw.close()
        finally:
            if turn.holder == me:  # inline, no call before the release: see fetch_turns.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()


def _unique(infos: Iterable[PartitionTopicInfo]) -> list[PartitionTopicInfo]:
    infos = list(infos)
    if len({i.key for i in infos}) != len(infos):
        raise ValueError("the same partition appears twice")
    return infos
