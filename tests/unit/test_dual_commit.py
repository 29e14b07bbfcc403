"""Dual commit's Kafka side, pure parts: classification, episodes, report wording, admin config, metric."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from prometheus_client import CollectorRegistry, generate_latest

from zkconsumer.consumer.fetcher import FetchSettings
from zkconsumer.errors import BrokersUnavailable, CommitFailed, ConsumerError
from zkconsumer.metrics import ConnectorCollector, Snapshot
from zkconsumer.offsets.broker_group_lookup import BrokerGroupView, BrokerMember, admin_config
from zkconsumer.offsets.dual_commit import (
    KafkaCommitEpisodes,
    KafkaFailure,
    classify,
    error_text,
    kafka_error,
    recovered_info,
    rejected_warning,
    transient_warning,
)


def kafka_exc(code: int, reason: str = "Commit failed", fatal: bool = False) -> KafkaException:
    return KafkaException(KafkaError(code, reason, fatal=fatal))


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.STALE_MEMBER_EPOCH,
    ],
)
def test_a_live_broker_group_rejection_is_told_apart(code: int) -> None:
    assert classify(kafka_exc(code)) is KafkaFailure.REJECTED


def test_a_rejection_is_found_behind_a_wrapping_error() -> None:
    try:
        try:
            raise kafka_exc(KafkaError.UNKNOWN_MEMBER_ID)
        except KafkaException as inner:
            raise CommitFailed("Kafka offset commit failed") from inner
    except CommitFailed as outer:
        wrapped = outer
    assert classify(wrapped) is KafkaFailure.REJECTED
    assert kafka_error(wrapped).code() == KafkaError.UNKNOWN_MEMBER_ID  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "exc",
    [
        kafka_exc(KafkaError._ALL_BROKERS_DOWN),
        kafka_exc(KafkaError._TRANSPORT),
        kafka_exc(KafkaError._TIMED_OUT),
        kafka_exc(KafkaError.NOT_COORDINATOR),
        kafka_exc(KafkaError.COORDINATOR_NOT_AVAILABLE),
        kafka_exc(KafkaError.UNKNOWN_TOPIC_OR_PART),
        BrokersUnavailable("no broker connection yet"),
        TimeoutError("g_c-fetcher did not run a command within 60.0s"),
        CommitFailed("t-0 failed"),
    ],
)
def test_broker_trouble_is_transient(exc: BaseException) -> None:
    assert classify(exc) is KafkaFailure.TRANSIENT


@pytest.mark.parametrize(
    "exc",
    [
        kafka_exc(KafkaError._FATAL, fatal=True),
        AttributeError("'NoneType' object has no attribute 'commit'"),
        ConsumerError("fetcher g_c is not running"),
    ],
)
def test_bugs_and_fatal_client_errors_are_fatal(exc: BaseException) -> None:
    assert classify(exc) is KafkaFailure.FATAL


def test_error_text_names_the_broker_code() -> None:
    assert (
        error_text(kafka_exc(KafkaError.UNKNOWN_MEMBER_ID, "Commit failed: Broker: Unknown member"))
        == "UNKNOWN_MEMBER_ID (Commit failed: Broker: Unknown member)"
    )
    assert error_text(TimeoutError("slow")) == "TimeoutError: slow"


def test_each_kind_is_reported_once_per_episode_and_the_end_once() -> None:
    episodes = KafkaCommitEpisodes()
    assert episodes.succeeded() is None  # no episode open: nothing to report
    assert [episodes.failed(KafkaFailure.REJECTED) for _ in range(3)] == [True, False, False]
    assert episodes.failed(KafkaFailure.TRANSIENT) is True  # another kind: reported once too
    assert episodes.failed(KafkaFailure.REJECTED) is False  # back to rejections: same episode
    ended = episodes.succeeded()
    assert ended is not None and ended.counts == {KafkaFailure.REJECTED: 4, KafkaFailure.TRANSIENT: 1}
    assert episodes.succeeded() is None
    assert episodes.failed(KafkaFailure.REJECTED) is True  # a new episode is reported again


def test_the_rejection_warning_names_group_error_and_broker_members() -> None:
    view = BrokerGroupView("Stable", (BrokerMember("billing-new", "/10.0.0.7", "billing-new-1f2e"),))
    text = rejected_warning("billing", "UNKNOWN_MEMBER_ID (Commit failed: Broker: Unknown member)", view)
    assert text.startswith(
        "group billing: a broker-coordinated consumer group with the same id is active "
        "(state Stable; members: client.id=billing-new host=/10.0.0.7 member.id=billing-new-1f2e)"
    )
    assert "Kafka-side commits are rejected with UNKNOWN_MEMBER_ID" in text
    assert "ZooKeeper commits continue" in text and "migration guide" in text
    assert "describing the broker-side group failed" in rejected_warning("billing", "X", None)


def test_transient_and_recovery_lines_say_zookeeper_went_on() -> None:
    assert "ZooKeeper commits continue" in transient_warning("billing", "_TRANSPORT (down)")
    episodes = KafkaCommitEpisodes()
    episodes.failed(KafkaFailure.REJECTED)
    episodes.failed(KafkaFailure.REJECTED)
    ended = episodes.succeeded()
    assert ended is not None
    assert recovered_info("billing", ended) == (
        "group billing: Kafka-side offset commits succeed again after 2 "
        "failed (2 rejected); ZooKeeper commits were written throughout"
    )


def test_admin_config_keeps_connection_and_security_drops_consumer_only() -> None:
    settings = FetchSettings(
        bootstrap_servers="b1:9092",
        group_id="billing",
        client_id="billing-1",
        overrides={"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "session.timeout.ms": "10000"},
    )
    conf = admin_config(settings.consumer_config())
    assert (conf["bootstrap.servers"], conf["client.id"]) == ("b1:9092", "billing-1")
    assert (conf["security.protocol"], conf["sasl.mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    for consumer_only in (
        "group.id",
        "enable.auto.commit",
        "fetch.wait.max.ms",
        "session.timeout.ms",
        "queued.min.messages",
        "auto.offset.reset",
    ):
        assert consumer_only not in conf


def test_the_failure_counters_are_exposed_by_reason() -> None:
    registry = CollectorRegistry()
    registry.register(ConnectorCollector(lambda: Snapshot(kafka_commits_rejected=7, kafka_commit_errors=2), "c", "g"))
    text = generate_latest(registry).decode()
    assert 'zkconsumer_dual_commit_kafka_failures_total{client_id="c",group_id="g",reason="rejected"} 7.0' in text
    assert 'zkconsumer_dual_commit_kafka_failures_total{client_id="c",group_id="g",reason="transient"} 2.0' in text
