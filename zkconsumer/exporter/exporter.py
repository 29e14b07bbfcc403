"""The running exporter: owns the ZooKeeper session, the log-end reader, the refresh thread and the HTTP server."""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import asdict
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from zkconsumer.exporter import api, families, page
from zkconsumer.exporter.exposition import Exposition, GroupLines
from zkconsumer.exporter.families import Health
from zkconsumer.exporter.history import LagHistory
from zkconsumer.exporter.log_ends import LogEnds
from zkconsumer.exporter.registrations import Registrations
from zkconsumer.exporter.server import Body, HttpServer
from zkconsumer.exporter.view import EXPIRE_GROUP_AFTER_S, RETIRED_AFTER_S, ClusterView, ViewState
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watch_rearm import WatchRearm

log = logging.getLogger(__name__)
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The least time between two refreshes woken by watches: commits arriving together share one.
SETTLE_S = 0.2


class Exporter:
    """Refreshes a ClusterView every `interval_s` on a thread named "zkconsumer-exporter-refresh"
    and serves it over HTTP: /metrics (the group families rendered when a refresh is published,
    only the sampled groups' lines again; the exporter's own at every scrape) and the JSON API
    under /v1, both from the same published refresh.

    The caller owns `client` (made by zookeeper.client.connect) and `log_ends` (entered): the
    exporter only reads through them. A refresh that fails (ZooKeeper unreachable, a timeout) is
    logged, counted in zkconsumer_exporter_refreshes_total{result="failed"} and kept in
    `last_error`; the last good view is served meanwhile and the next interval tries again.

    Example::

        exporter = Exporter(client, log_ends, host="0.0.0.0", port=9308, interval_s=5, window_s=600)
        exporter.start()
        ...
        exporter.stop(timeout_s=10)
    """

    def __init__(
        self,
        client: KazooClient,
        log_ends: LogEnds | None,
        *,
        host: str,
        port: int,
        interval_s: float,
        window_s: float,
        groups: re.Pattern[str] | None = None,
        zk_timeout_s: float = 10.0,
        retired_after_s: float | None = RETIRED_AFTER_S,
        expire_group_after_s: float | None = EXPIRE_GROUP_AFTER_S,
    ) -> None:
        self.client = client
        self.log_ends = log_ends
        self.interval_s = interval_s
        self.view = ClusterView(
            ZkIO(client, zk_timeout_s, "the exporter"),
            log_ends,
            window_s=window_s,
            interval_s=interval_s,
            groups=groups,
            retired_after_s=retired_after_s,
            expire_group_after_s=expire_group_after_s,
            on_change=self._on_group_change,
        )
        self.history = LagHistory(interval_s)  # the web page's chart: each group's lag over the last hour
        self.registrations = Registrations(self.view.io)  # the web page's members
        self.http = HttpServer(host, port, self.route)
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._started_ms = int(time.time() * 1000)
        self._refreshed = threading.Condition()
        self._rendered = Exposition()  # the view's families, kept compressed
        self._published = self.view.state  # the state _rendered shows (the view's may be newer)
        # each group's lines until its state changes
        self._lines = GroupLines(families.group_parts, families.view_headers())
        self._ok = self._failed = 0
        self._refresh_seconds = 0.0
        self._requests = 0  # the view's count after the last refresh (the view is the refresh thread's)
        self._connected = client.connected
        # A blip in the same session keeps the watches (re-armed by SetWatches): only what the
        # server fires for changes made meanwhile is re-read. Without it (kazoo not gated in, the
        # server refused), kazoo fires every watch and every group is re-read, as after a LOST.
        self.rearm = WatchRearm(client)
        self._lost = threading.Event()  # set on kazoo's thread; the refresh thread re-reads everything
        # Set on kazoo's thread when a watched node of a group changed (a commit): the refresh
        # thread refreshes then, at most every `settle_s`, rather than at its next tick.
        self._changed = threading.Event()
        self._changed_lock = threading.Lock()
        self._changed_groups: set[str] = set()  # whose watches fired since the last refresh took them
        self._between_s = 0.0  # how long the last refresh between ticks took
        self._between_at = 0.0  # when it ended (monotonic)
        self.settle_s = min(interval_s, SETTLE_S)
        self._thread = threading.Thread(target=self._run, name="zkconsumer-exporter-refresh", daemon=True)
        client.add_listener(self._on_state)

    @property
    def port(self) -> int:
        return self.http.port

    def start(self) -> None:
        self._thread.start()
        self.http.start()

    def stop(self, timeout_s: float) -> bool:
        """Stop refreshing and serving; False if a thread had not ended within `timeout_s` each."""
        self._stop.set()
        self._changed.set()  # wakes the refresh thread's wait
        self.client.remove_listener(self._on_state)
        self.rearm.close()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)
        served = self.http.stop(timeout_s)
        return served and not self._thread.is_alive()

    def wait_for_refresh(self, after_ms: int, timeout_s: float) -> ViewState:
        """The first state published after `after_ms` (TimeoutError naming the last error if none comes)."""
        deadline = time.monotonic() + timeout_s
        with self._refreshed:
            while self._published.at_ms <= after_ms:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no refresh within {timeout_s:g} s (last error: {self.last_error})")
                self._refreshed.wait(left)
            return self._published

    def _on_state(self, state: KazooState) -> None:
        """kazoo's thread: connected or not; a lost session took its watches, so everything is re-read."""
        self._connected = state == KazooState.CONNECTED
        if state == KazooState.LOST:
            self._lost.set()  # the view is the refresh thread's alone: it invalidates it there

    def _on_group_change(self, group: str) -> None:
        with self._changed_lock:  # kazoo's thread: no I/O under the lock
            self._changed_groups.add(group)
        self._changed.set()

    def _run(self) -> None:
        """A refresh of every group every `interval_s` (a tick: a new sample), and between ticks one
        of the groups whose watches fired (a commit) as soon as one fired, at least `settle_s` (and
        as long as the last such refresh took) after the last, whose samples take the place of
        their newest: a commit shows within about settle_s plus one such refresh, for the requests
        the tick would have sent anyway (only what changed is read). A tick samples the groups a
        slice at a time (ClusterView.begin_tick) and serves such commits between its slices too."""
        next_tick = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_tick:
                next_tick = max(next_tick + self.interval_s, now)  # a refresh that overran skips ticks
                self.refresh_once()
            else:
                self._refresh_changed()
            # At least as long as the last such refresh took: they take half the thread's time at most.
            pause = max(self.settle_s, self._between_s)
            self._stop.wait(min(pause, max(0.0, next_tick - time.monotonic())))
            if self._between_s > self.interval_s / 4 and not self._stop.is_set():
                # Refreshes of one group this long would delay the ticks more than they speed up a
                # commit: then a commit waits for the tick.
                self._stop.wait(max(0.0, next_tick - time.monotonic()))
                continue
            self._changed.wait(max(0.0, next_tick - time.monotonic()))

    def refresh_once(self, *, between_ticks: bool = False, only: set[str] | None = None) -> None:
        """One refresh: read, judge, render; a failure is logged and counted, never raised.
        `between_ticks`, `only`: the groups' samples replace their newest, only these groups are
        sampled (ClusterView.refresh). Without `only`, every group, a slice at a time; commits whose
        watches fired meanwhile are shown between two slices (no sooner than `settle_s` apart)."""
        began = time.monotonic()
        try:
            self._forget_if_lost()
            if only is not None:
                state = self.view.refresh(between_ticks=between_ticks, only=only)
            else:
                state, slices = self.view.state, self.view.begin_tick()
                for number, names in enumerate(slices):
                    if number and self._changed.is_set() and time.monotonic() - self._between_at >= self._pause():
                        self._refresh_changed(inside_tick=True)
                    state = self.view.tick_slice(names, last=number == len(slices) - 1, between_ticks=between_ticks)
                self.history.record(state.at_ms, {name: group.verdict for name, group in state.groups.items()})
            self._publish(state)
        except Exception as exc:  # noqa: BLE001 - any failure of one refresh: the next one tries again
            self._failed += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("refresh failed (serving the last good view): %s", self.last_error)
            return
        finally:
            self._refresh_seconds = time.monotonic() - began

    def _pause(self) -> float:
        return max(self.settle_s, self._between_s)

    def _refresh_changed(self, *, inside_tick: bool = False) -> None:
        """Sample the groups whose watches fired since the last such refresh took them (if any)."""
        self._changed.clear()  # a watch firing from here on is either read now or wakes the next
        with self._changed_lock:
            changed, self._changed_groups = self._changed_groups, set()
        if not changed and not self._lost.is_set():
            return
        began = time.monotonic()
        if inside_tick:  # the tick's own try: a failure fails the tick
            self._publish(self.view.refresh(between_ticks=True, only=changed))
        else:
            self.refresh_once(between_ticks=True, only=changed)
        self._between_at = time.monotonic()
        self._between_s = self._between_at - began

    def _forget_if_lost(self) -> None:
        if self._lost.is_set():
            self._lost.clear()
            self.view.invalidate()
            self.registrations.invalidate()

    def _publish(self, state: ViewState) -> None:
        """Render the state (only the groups whose state changed) and serve it."""
        self.registrations.update(state.groups)
        rendered = self._lines.exposition(state.groups)
        with self._refreshed:
            self._rendered = rendered
            self._published = state
            self._requests = self.view.requests + self.registrations.requests
            self._ok += 1
            self.last_error = None
            self._refreshed.notify_all()

    def health(self) -> Health:
        published = self._published
        return Health(
            connected=self._connected,
            last_refresh_ms=self._published.at_ms,
            refresh_seconds=self._refresh_seconds,
            refreshes_ok=self._ok,
            refreshes_failed=self._failed,
            zookeeper_requests=self._requests,
            log_end_reads=0 if self.log_ends is None else self.log_ends.batches,
            groups=len(published.groups),
            unreadable_groups=len(published.unreadable),
            unseen_partitions=published.unseen_partitions,
            expired_groups=len(published.expired),
            started_ms=self._started_ms,
        )

    def health_doc(self) -> dict[str, Any]:
        return {
            **asdict(self.health()),
            "last_error": self.last_error,
            "thread_alive": self._thread.is_alive(),
            "watch_rearm": self.rearm.enabled,
            "watch_rearms": self.rearm.rearmed,
            "watch_rearm_fallbacks": self.rearm.fallbacks,
        }

    def route(self, path: str) -> tuple[int, str, Body] | None:
        """The HTTP server's pages (its threads call this; everything read here is published state):
        /metrics, /healthz, the web page at / (with its script and style) and the JSON API."""
        if path.split("?", 1)[0] == "/metrics":
            with self._refreshed:
                rendered = self._rendered
            return 200, METRICS_TYPE, rendered.with_tail(families.render(families.health_families(self.health())))
        if path.split("?", 1)[0] == "/healthz":
            ok = self._thread.is_alive() and self._published.at_ms > 0
            return (200 if ok else 503), "text/plain; charset=utf-8", (b"ok\n" if ok else b"not refreshed yet\n")
        asset = page.asset(path.split("?", 1)[0])
        if asset is not None:
            return asset
        return api.answer(path, self._published, self.health_doc(), self.history, self.registrations.members)
