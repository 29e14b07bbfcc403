"""The Exporter's service side on the in-memory ZooKeeper: real HTTP pages, a failed refresh surfaced, a bounded stop."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kazoo.protocol.states import KazooState

from harness.zkmodel import ZkModel
from zkconsumer.errors import ZooKeeperUnavailable
from zkconsumer.exporter.exporter import Exporter
from zkconsumer.zookeeper import znodes

TOPIC_NODE = b'{"version":1,"partitions":{"0":[1]}}'


def _exporter() -> tuple[ZkModel, Exporter]:
    model = ZkModel()
    admin, client = model.client("admin"), model.client("exporter")
    admin.start()
    client.start()
    admin.ensure_path(znodes.BROKER_TOPICS)
    admin.create(znodes.topic_path("orders"), TOPIC_NODE)
    admin.create(znodes.offset_path("billing", "orders", 0), b"5", makepath=True)
    # the model's mtimes are not the wall clock's: no group expiry (--expire-group-after) here
    exporter = Exporter(
        client,
        None,
        host="127.0.0.1",
        port=0,
        interval_s=1.0,
        window_s=10.0,
        zk_timeout_s=0.0,
        expire_group_after_s=None,
    )
    return model, exporter


def _get(exporter: Exporter, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}{path}", timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_pages_a_failed_refresh_and_the_stop() -> None:
    _model, exporter = _exporter()
    exporter.http.start()  # refreshes are driven by the test (the model is single-threaded)
    try:
        assert _get(exporter, "/healthz")[0] == 503  # not refreshed yet
        exporter.refresh_once()
        code, body = _get(exporter, "/metrics")
        assert code == 200
        text = body.decode()
        assert 'zkconsumer_group_unowned_partitions{group="billing"} 1.0' in text
        assert 'zkconsumer_partition_committed_offset{group="billing",topic="orders",partition="0"} 5.0' in text
        samples = [line for line in text.splitlines() if not line.startswith("#")]
        assert not [line for line in samples if line.startswith("zkconsumer_partition_log_end_offset")]  # no broker
        assert 'zkconsumer_exporter_refreshes_total{result="ok"} 1.0' in text
        code, body = _get(exporter, "/v1/groups")
        doc: dict[str, Any] = json.loads(body)
        assert code == 200 and [g["group"] for g in doc["groups"]] == ["billing"]
        assert doc["log_ends_unavailable"] == "no broker to ask"
        code, body = _get(exporter, "/v1/groups/billing/partitions")
        (row,) = json.loads(body)["partitions"]
        assert (row["current_offset"], row["log_end_offset"], row["lag"], row["ownership"]) == (
            5,
            None,
            None,
            "unowned",
        )
        assert _get(exporter, "/nowhere")[0] == 404
        assert _get(exporter, "/v1/groups/billing/nothing")[0] == 404

        # A refresh that fails is counted and said; the last good view is still served.
        def unreachable(**_kinds: object) -> Any:
            raise ZooKeeperUnavailable("no answer from ZooKeeper within 0.0s to get_children /consumers")

        exporter.view.begin_tick = unreachable  # type: ignore[method-assign]
        exporter.refresh_once()
        text = _get(exporter, "/metrics")[1].decode()
        assert 'zkconsumer_exporter_refreshes_total{result="failed"} 1.0' in text
        assert 'zkconsumer_group_unowned_partitions{group="billing"} 1.0' in text
        health = json.loads(_get(exporter, "/v1/groups")[1])["exporter"]
        assert health["last_error"] == (
            "ZooKeeperUnavailable: no answer from ZooKeeper within 0.0s to get_children /consumers"
        )
        assert (health["refreshes_ok"], health["refreshes_failed"]) == (1, 1)
    finally:
        assert exporter.stop(timeout_s=5.0)
    with pytest.raises(OSError):
        _get(exporter, "/metrics")  # the socket is closed


def test_a_lost_session_makes_the_next_refresh_read_everything() -> None:
    model, exporter = _exporter()
    exporter.refresh_once()
    model.deliver()
    before = exporter.view.requests
    exporter.refresh_once()
    assert exporter.view.requests == before  # nothing changed: nothing asked
    exporter._on_state(KazooState.SUSPENDED)
    assert exporter.health().connected is False
    exporter._on_state(KazooState.LOST)
    exporter._on_state(KazooState.CONNECTED)
    exporter.refresh_once()
    assert exporter.health().connected is True
    assert exporter.view.requests - before == before  # the first refresh's reads, once more
