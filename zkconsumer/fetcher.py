"""The fetcher: one confluent-kafka Consumer on one thread, routing fetched messages into stream queues."""
from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from zkconsumer.stream import Chunk, ConsumerError, Message, PartitionTopicInfo

__all__ = ["ConsumerProxy", "FetchSettings", "Fetcher"]

log = logging.getLogger(__name__)

Key = tuple[str, int]

# Forced whatever the overrides say: we commit and store offsets ourselves, and we must SEE an
# out-of-range fetch to apply (and log) the legacy auto.offset.reset policy.
_ALWAYS: dict[str, object] = {"enable.auto.commit": False, "enable.auto.offset.store": False,
                              "auto.offset.reset": "error", "enable.partition.eof": False}
_POLL_TIMEOUT = 0.1        # consume() wait: bounds how late a command or close() is noticed
_HELD_POLL_TIMEOUT = 0.01  # while partitions wait for queue space, notice that space quickly
_IDLE_WAIT = 1.0           # nothing fetchable: sleep until a command or queue space wakes us
_COMMAND_TIMEOUT = 60.0
_RESET_RETRY = 1.0         # out-of-range reset whose watermark lookup failed: retry after this
_WARN_EVERY = 30.0         # rate limit of repeated warnings (per error code)


@dataclass(frozen=True)
class FetchSettings:
    """The legacy fetch properties, mapped onto librdkafka by `consumer_config()`."""

    bootstrap_servers: str
    group_id: str  # librdkafka needs one even with assign() only; we never subscribe()
    client_id: str
    fetch_message_max_bytes: int = 1048576
    fetch_min_bytes: int = 1
    fetch_wait_max_ms: int = 100
    socket_timeout_ms: int = 30000
    socket_receive_buffer_bytes: int = 65536
    auto_offset_reset: str = "largest"  # "smallest" | "largest": applied by the Fetcher
    queued_max_message_chunks: int = 2
    overrides: Mapping[str, str] = field(default_factory=dict)  # raw librdkafka settings, applied last

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in ("smallest", "largest"):
            raise ValueError(f"auto_offset_reset must be smallest or largest, not {self.auto_offset_reset!r}")

    def consumer_config(self) -> dict[str, object]:
        fetch_max = max(52428800, self.fetch_message_max_bytes)
        # Prefetch bound for the whole consumer: the legacy chunks x fetch size, but at least 4 MB
        # so the fetcher thread finds data waiting instead of waiting on the network.
        prefetch_kb = max(4096, self.queued_max_message_chunks * self.fetch_message_max_bytes // 1024)
        conf: dict[str, object] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "max.partition.fetch.bytes": self.fetch_message_max_bytes,
            "fetch.max.bytes": fetch_max,
            "receive.message.max.bytes": max(100000000, fetch_max + 512),
            "fetch.min.bytes": max(1, self.fetch_min_bytes),
            "fetch.wait.max.ms": min(self.fetch_wait_max_ms, 300000),
            # legacy 0 means "no timeout"; librdkafka accepts 10..300000
            "socket.timeout.ms": min(max(self.socket_timeout_ms or 300000, 10), 300000),
            "socket.receive.buffer.bytes": max(0, self.socket_receive_buffer_bytes),
            "queued.max.messages.kbytes": min(prefetch_kb, 2097151),
            "queued.min.messages": 100000,
            "fetch.queue.backoff.ms": 10,  # default 1 s would starve us once the prefetch bound is hit
        }
        if self.client_id:
            conf["client.id"] = self.client_id
        conf.update(self.overrides)
        for name, value in _ALWAYS.items():
            if name in self.overrides and str(self.overrides[name]).lower() != str(value).lower():
                log.warning("librdkafka override %s=%s ignored: the fetcher needs %s", name,
                            self.overrides[name], value)
            conf[name] = value
        return conf


class Fetcher:
    """Fetch owned partitions with one Consumer and route them, chunk by chunk, into stream queues.

    Only the fetcher thread changes the assignment or touches `_held`/`_paused`; other threads
    post commands and wait for them. A full queue pauses just its partitions (backpressure
    without stalling other streams).
    """

    def __init__(self, settings: FetchSettings, *, name: str, on_error: Callable[[BaseException], None],
                 batch_size: int = 1000) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.settings = settings
        self.name = name
        self._on_error = on_error
        self._batch_size = batch_size
        self._hold_limit = max(1, settings.queued_max_message_chunks)  # refused chunks before pause()
        self._raw: Consumer | None = None  # touched by the fetcher thread only (see ConsumerProxy)
        self._proxy = ConsumerProxy(self)
        self._thread: threading.Thread | None = None
        self._commands: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._retry = False        # set by queue.on_space from application threads
        self._stopping = False
        self._close_on_exit = False
        self._closed = False
        self._close_lock = threading.Lock()
        self._inline_lock = threading.Lock()
        self._failure: BaseException | None = None
        # Replaced, never mutated, so lag() may read it from any thread.
        self._infos: dict[Key, PartitionTopicInfo] = {}
        self._held: dict[Key, collections.deque[Chunk]] = {}
        self._paused: set[Key] = set()
        self._resets: dict[Key, float] = {}   # partitions awaiting an out-of-range reset retry
        self._warned: dict[object, list[float]] = {}

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"fetcher {self.name} already started")
        conf = self.settings.consumer_config()
        conf.setdefault("error_cb", self._on_client_error)
        conf.setdefault("logger", logging.getLogger(f"{__name__}.librdkafka"))
        self._raw = Consumer(conf)
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-fetcher", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread, then close the Consumer. Idempotent; safe from any thread."""
        self._stopping = True
        self._close_on_exit = True  # if the thread outlives the join, it closes the Consumer itself
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s did not stop within %.1fs; it closes the consumer when it does",
                            thread.name, timeout)
        if thread is None or not thread.is_alive():
            self._close_consumer()

    @property
    def consumer(self) -> ConsumerProxy:
        """The Consumer, for offset commits/lookups: each call runs on the fetcher thread."""
        if self._raw is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        return self._proxy

    # ---- assignment commands (run on the fetcher thread) ------------------------------------
    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Replace the whole assignment; each partition is fetched from its `fetched_offset`."""
        infos = _unique(infos)
        if not infos:
            self.stop_fetching()
            return
        self._call(lambda: self._do_assign(infos))

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """Start fetching more partitions (an already assigned one is restarted)."""
        infos = _unique(infos)
        if infos:
            self._call(lambda: self._do_add(infos))

    def remove(self, keys: Iterable[Key]) -> None:
        """Stop fetching these (topic, partition)s and drop their held chunks."""
        keys = list(keys)
        if keys:
            self._call(lambda: self._do_remove(keys), required=False)

    def stop_fetching(self) -> None:
        """Unassign everything and drop held chunks (also fine on a stopped fetcher)."""
        self._call(lambda: self._do_assign([]), required=False)

    # ---- observation -------------------------------------------------------------------------
    def assigned(self) -> set[Key]:
        """What librdkafka currently has assigned (empty once closed)."""
        def read() -> set[Key]:
            if self._closed:
                return set()
            return {(tp.topic, tp.partition) for tp in self._raw.assignment()}  # type: ignore[union-attr]
        return self._call(read, required=False)  # type: ignore[return-value]

    def lag(self) -> dict[Key, int]:
        """high watermark - fetched offset per partition, from cached watermarks (best effort)."""
        def read() -> dict[Key, int]:
            out: dict[Key, int] = {}
            for key, info in ({} if self._closed else self._infos).items():
                try:
                    _, high = self._raw.get_watermark_offsets(TopicPartition(*key), cached=True)  # type: ignore[union-attr, misc]
                except (KafkaException, RuntimeError, TypeError):  # TypeError: None, not yet known
                    continue
                if high >= 0:
                    out[key] = max(0, high - info.fetched_offset)
            return out
        return self._call(read, required=False)  # type: ignore[return-value]

    # ---- calling into the fetcher thread -----------------------------------------------------
    def _call(self, fn: Callable[[], object], *, required: bool = True) -> object:
        """Run `fn` on the fetcher thread and return its result.

        Once the thread is gone, `required` calls raise ConsumerError; the others (removals,
        reads, ConsumerProxy calls) run right here: nothing else uses the Consumer anymore.
        """
        thread = self._thread
        if thread is None:
            raise RuntimeError(f"fetcher {self.name} not started")
        if thread is threading.current_thread():
            return fn()
        if thread.is_alive() and not self._stopping:
            fut: Future[object] = Future()
            self._commands.put((fn, fut))
            self._wake.set()
            deadline = time.monotonic() + _COMMAND_TIMEOUT
            while not wait_futures([fut], timeout=0.2).done:
                if not thread.is_alive() and fut.cancel():
                    break  # died before running it
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{thread.name} did not run a command within {_COMMAND_TIMEOUT:.0f}s")
            if not fut.cancelled():
                return fut.result()
        if required:
            raise ConsumerError(f"fetcher {self.name} is not running") from self._failure
        thread.join(_COMMAND_TIMEOUT)  # stopping: let it leave the Consumer first
        if thread.is_alive():
            raise TimeoutError(f"{thread.name} did not stop within {_COMMAND_TIMEOUT:.0f}s")
        with self._inline_lock:
            return fn()

    # ---- the fetcher thread ------------------------------------------------------------------
    def _run(self) -> None:
        consume = self._c.consume
        batch = self._batch_size
        wake = self._wake
        try:
            while not self._stopping:
                wake.clear()
                if not self._commands.empty():
                    self._run_commands()
                if self._retry:
                    self._retry = False
                    self._retry_held()
                if self._resets:
                    self._retry_resets()
                if len(self._infos) <= len(self._paused):  # nothing fetchable: no busy loop
                    wake.wait(_IDLE_WAIT)
                    continue
                messages = consume(batch, _HELD_POLL_TIMEOUT if self._paused else _POLL_TIMEOUT)
                if messages:
                    self._route(messages)
        except BaseException as exc:  # noqa: BLE001 - report anything that kills the thread
            self._failure = exc
            log.error("%s-fetcher failed", self.name, exc_info=exc)
            try:
                self._on_error(exc)
            except Exception:  # noqa: BLE001
                log.exception("%s-fetcher: on_error callback failed", self.name)
        finally:
            if self._close_on_exit:
                self._close_consumer()

    def _run_commands(self) -> None:
        while True:
            try:
                fn, fut = self._commands.get_nowait()
            except queue.Empty:
                return
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - the caller gets it
                    fut.set_exception(exc)

    def _route(self, messages: list) -> None:  # type: ignore[type-arg]
        """Group a consume() batch by partition (order kept) into one chunk per partition."""
        runs: dict[Key, list[Message]] = {}
        errors = []
        make = Message
        last_topic = last_partition = out = None
        for m in messages:  # hot loop: no calls beyond the accessors and Message()
            if m.error() is not None:
                errors.append(m)
                continue
            topic = m.topic()
            partition = m.partition()
            if partition != last_partition or topic != last_topic:
                out = runs.get((topic, partition))
                if out is None:
                    out = runs[(topic, partition)] = []
                last_topic, last_partition = topic, partition
            ts = m.timestamp()
            out.append(make(topic, partition, m.offset(), m.key(), m.value(), ts[1] if ts[0] else None,  # type: ignore[union-attr]
                            m.headers()))
        infos = self._infos
        held_map = self._held
        to_pause = []
        for key, run in runs.items():
            info = infos.get(key)
            if info is None or not info.active:
                continue  # stale: fetched before the partition was removed or released
            fetched = info.fetched_offset
            if run[0].offset < fetched:
                run = [x for x in run if x.offset >= fetched]
                if not run:
                    continue
            info.fetched_offset = run[-1].offset + 1
            chunk = Chunk(info, run)
            held = held_map.get(key)
            if held is not None:
                held.append(chunk)  # behind the refused ones: order within a partition is kept
            elif not info.queue.offer(chunk):
                held = held_map[key] = collections.deque((chunk,))
            else:
                continue
            if len(held) >= self._hold_limit and key not in self._paused:
                to_pause.append(key)
        if to_pause:
            self._c.pause([TopicPartition(t, p) for t, p in to_pause])
            self._paused.update(to_pause)
        for m in errors:
            self._on_message_error(m)

    def _on_space(self) -> None:
        """queue.on_space: called from application threads, so only flag and wake."""
        self._retry = True
        self._wake.set()

    def _retry_held(self) -> None:
        resume = []
        for key in list(self._held):
            held = self._held.pop(key)
            info = held[0].info
            if not info.active:
                continue  # released: drop; stays paused until remove()/assign()
            offer = info.queue.offer
            while held and offer(held[0]):
                held.popleft()
            if held:
                self._held[key] = held  # re-inserted last: partitions sharing a queue take turns
            elif key in self._paused:
                resume.append(key)
        if resume:
            self._c.resume([TopicPartition(t, p) for t, p in resume])
            self._paused.difference_update(resume)

    def _forget(self, keys: Iterable[Key]) -> None:
        """Drop held chunks and pause state (librdkafka keeps a pause across unassign/assign)."""
        resume = []
        for key in keys:
            self._held.pop(key, None)
            self._resets.pop(key, None)
            if key in self._paused:
                self._paused.discard(key)
                resume.append(TopicPartition(*key))
        if resume:
            self._c.resume(resume)

    def _watch(self, infos: Iterable[PartitionTopicInfo]) -> None:
        for info in infos:
            info.queue.on_space = self._on_space

    @property
    def _c(self) -> Consumer:
        assert self._raw is not None, "not started"
        return self._raw

    def _resolve_offsets(self, infos: Sequence[PartitionTopicInfo]) -> None:
        """No committed offset (-1): start at the log start or end per auto.offset.reset."""
        policy = self.settings.auto_offset_reset
        for info in infos:
            if info.fetched_offset < 0:
                low, high = self._watermarks(info.topic, info.partition)
                start = low if policy == "smallest" else high
                # committed_offset stays -1, so the next commit persists the reset (as Scala does)
                info.fetched_offset = info.consumed_offset = start
                log.info("%s-%d: no committed offset, starting at %d (auto.offset.reset=%s)",
                         info.topic, info.partition, start, policy)

    def _watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        marks = self._c.get_watermark_offsets(TopicPartition(topic, partition),
                                              timeout=max(self.settings.socket_timeout_ms, 1000) / 1000)
        if marks is None:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"watermarks of {topic}-{partition}"))
        return marks

    def _do_assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        if self._closed:  # stop_fetching() after close(): nothing to undo
            self._infos, self._held, self._paused = {}, {}, set()
            return
        self._resolve_offsets(infos)
        self._forget(list(self._infos))
        if infos:
            self._c.assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        else:
            self._c.unassign()
        self._infos = {i.key: i for i in infos}
        self._watch(infos)

    def _do_add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        self._resolve_offsets(infos)
        self._do_remove([i.key for i in infos if i.key in self._infos])
        self._c.incremental_assign([TopicPartition(i.topic, i.partition, i.fetched_offset) for i in infos])
        self._infos = {**self._infos, **{i.key: i for i in infos}}
        self._watch(infos)

    def _do_remove(self, keys: Iterable[Key]) -> None:
        gone = [k for k in dict.fromkeys(keys) if k in self._infos]
        if gone and not self._closed:
            self._forget(gone)
            self._c.incremental_unassign([TopicPartition(t, p) for t, p in gone])
            self._infos = {k: v for k, v in self._infos.items() if k not in gone}

    # ---- errors ------------------------------------------------------------------------------
    def _on_message_error(self, m) -> None:  # type: ignore[no-untyped-def]
        err: KafkaError = m.error()
        code = err.code()
        if err.fatal():
            raise KafkaException(err)
        if code == KafkaError._AUTO_OFFSET_RESET and m.topic() is not None:
            self._reset_out_of_range((m.topic(), m.partition()), m.offset())
        elif code != KafkaError._PARTITION_EOF:
            where = f"{m.topic()}-{m.partition()}: " if m.topic() is not None else ""
            self._warn(code, "%s: %s%s", self.name, where, err)

    def _on_client_error(self, err: KafkaError) -> None:
        """librdkafka error_cb (served inside consume(), on the fetcher thread)."""
        if err.fatal():
            raise KafkaException(err)  # surfaces from consume() and ends the thread
        self._warn(err.code(), "%s: %s (librdkafka retries)", self.name, err)

    def _reset_out_of_range(self, key: Key, offset: int) -> None:
        """OFFSET_OUT_OF_RANGE: move fetched and consumed offsets to the log start or end."""
        info = self._infos.get(key)
        if info is None or not info.active:
            return
        policy = self.settings.auto_offset_reset
        try:
            low, high = self._watermarks(*key)
        except KafkaException as exc:
            self._warn(("reset",) + key, "%s-%d: out of range, but watermarks failed (%s); retrying", *key, exc)
            self._resets[key] = time.monotonic() + _RESET_RETRY
            return
        self._resets.pop(key, None)
        new = low if policy == "smallest" else high
        old = offset if offset >= 0 else info.fetched_offset
        log.warning("%s-%d: offset %d out of range [%d, %d); reset fetched and consumed offset to %d "
                    "(auto.offset.reset=%s): messages may be lost or repeated", key[0], key[1], old, low, high,
                    new, policy)
        info.fetched_offset = info.consumed_offset = new
        self._forget([key])
        tp = TopicPartition(*key)
        # seek() fails with _STATE here: librdkafka stopped the partition. Re-add it instead.
        self._c.incremental_unassign([tp])
        self._c.incremental_assign([TopicPartition(key[0], key[1], new)])

    def _retry_resets(self) -> None:
        now = time.monotonic()
        for key, due in list(self._resets.items()):
            if due <= now:
                self._reset_out_of_range(key, -1)

    def _warn(self, what: object, msg: str, *args: object) -> None:
        now = time.monotonic()
        seen = self._warned.get(what)
        if seen is not None and now - seen[0] < _WARN_EVERY:
            seen[1] += 1
            return
        suppressed = int(seen[1]) if seen else 0
        log.warning(msg + (f" ({suppressed} similar suppressed)" if suppressed else ""), *args)
        self._warned[what] = [now, 0]

    def _close_consumer(self) -> None:
        with self._close_lock, self._inline_lock:
            if self._closed or self._raw is None:
                return
            self._closed = True
            try:
                self._raw.close()
            except (KafkaException, RuntimeError) as exc:
                log.warning("%s: closing the consumer failed: %s", self.name, exc)


class ConsumerProxy:
    """The fetcher's Consumer for other threads: every method call runs on the fetcher thread.

    confluent-kafka 2.16 serializes all calls on one Consumer behind a gate that consume()
    holds while it waits; a caller on another thread polls that gate every millisecond and
    starves while the fetcher loops (verified: commit() and committed() hang). Posting the
    call to the fetcher thread avoids that. Once the fetcher stopped, calls run inline.
    """

    __slots__ = ("_fetcher",)

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._fetcher._c, name)
        if not callable(attr):
            return attr

        def call(*args: object, **kwargs: object) -> object:
            return self._fetcher._call(lambda: attr(*args, **kwargs), required=False)

        return call


def _unique(infos: Iterable[PartitionTopicInfo]) -> list[PartitionTopicInfo]:
    infos = list(infos)
    if len({i.key for i in infos}) != len(infos):
        raise ValueError("the same partition appears twice")
    return infos
