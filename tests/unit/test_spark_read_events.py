"""How the executor read treats librdkafka's per-message error events: reconnection noise waits, the rest fails."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException

from zkconsumer.spark.kafka_read import TRANSIENT_CODES, _handle_event
from zkconsumer.spark.offsets import OffsetRange

PART = OffsetRange("t", 0, 10, 20, "b:9092")


@dataclass
class Event:
    """What Consumer.consume() hands back for an error: a Message whose error() is set."""

    code: int
    fatal: bool = False

    def error(self) -> KafkaError:
        return KafkaError(self.code, "test", fatal=self.fatal)  # confluent-kafka: retriable=False

    def offset(self) -> int:
        return -1


def test_the_transient_codes_are_the_reconnection_errors_by_name() -> None:
    names = {
        "_TRANSPORT",
        "_ALL_BROKERS_DOWN",
        "_RESOLVE",
        "_TIMED_OUT",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_FOR_PARTITION",
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
    }
    assert TRANSIENT_CODES == {getattr(KafkaError, name) for name in names}


@pytest.mark.parametrize("code", sorted(TRANSIENT_CODES))
def test_reconnection_errors_keep_the_position_although_marked_not_retriable(code: int) -> None:
    assert not Event(code).error().retriable()
    assert _handle_event(None, PART, Event(code), 15, fail_on_data_loss=True) == (15, False)


@pytest.mark.parametrize(
    "event",
    [
        Event(KafkaError.TOPIC_AUTHORIZATION_FAILED),
        Event(KafkaError.UNKNOWN_TOPIC_OR_PART),
        Event(KafkaError._TRANSPORT, fatal=True),
    ],
)
def test_other_errors_and_fatal_ones_fail_the_read_naming_the_partition(event: Event) -> None:
    with pytest.raises(RuntimeError, match="reading t-0: ") as failure:
        _handle_event(None, PART, event, 15, fail_on_data_loss=True)
    assert isinstance(failure.value.__cause__, KafkaException)
