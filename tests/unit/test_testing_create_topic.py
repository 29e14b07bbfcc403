"""The test kit's create_topic asks again when the controller moved, and refuses what a retry cannot mend."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from zkconsumer.testing import kafka


class _Admin:
    """An AdminClient stand-in whose create_topics answers each call with the next scripted error (or success)."""

    def __init__(self, answers: list[int | None], calls: list[str]) -> None:
        self._answers = answers
        self._calls = calls

    def create_topics(self, topics: list[Any], operation_timeout: float) -> dict[str, Future[None]]:
        name = topics[0].topic
        self._calls.append(name)
        future: Future[None] = Future()
        code = self._answers.pop(0)
        if code is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(code)))
        return {name: future}

    def poll(self, timeout: float) -> int:
        return 0


def _script(monkeypatch: pytest.MonkeyPatch, answers: list[int | None]) -> tuple[list[str], list[str]]:
    calls: list[str] = []
    waited: list[str] = []
    monkeypatch.setattr(kafka, "admin", lambda bootstrap: _Admin(answers, calls))
    monkeypatch.setattr(kafka, "wait_for_leaders", lambda bootstrap, name, *args, **kw: waited.append(name))
    monkeypatch.setattr("zkconsumer.testing.kafka.time.sleep", lambda seconds: None)
    return calls, waited


def test_not_controller_is_asked_again_then_waits_for_leaders(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, waited = _script(monkeypatch, [KafkaError.NOT_CONTROLLER, None])
    kafka.create_topic("b:9092", "t", 3)
    assert calls == ["t", "t"]
    assert waited == ["t"]


def test_already_exists_after_a_retry_means_the_first_attempt_landed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, waited = _script(monkeypatch, [KafkaError.NOT_CONTROLLER, KafkaError.TOPIC_ALREADY_EXISTS])
    kafka.create_topic("b:9092", "t", 3)
    assert calls == ["t", "t"] and waited == ["t"]


def test_already_exists_on_the_first_attempt_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, waited = _script(monkeypatch, [KafkaError.TOPIC_ALREADY_EXISTS])
    with pytest.raises(KafkaException) as raised:
        kafka.create_topic("b:9092", "t", 3)
    assert raised.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert calls == ["t"] and waited == []


def test_a_refusal_no_retry_mends_is_raised_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, waited = _script(monkeypatch, [KafkaError.INVALID_REPLICATION_FACTOR])
    with pytest.raises(KafkaException):
        kafka.create_topic("b:9092", "t", 3, replication_factor=5)
    assert calls == ["t"] and waited == []


def test_not_controller_past_the_deadline_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, waited = _script(monkeypatch, [KafkaError.NOT_CONTROLLER] * 3)
    with pytest.raises(KafkaException) as raised:
        kafka.create_topic("b:9092", "t", 3, timeout=-1.0)
    assert raised.value.args[0].code() == KafkaError.NOT_CONTROLLER
    assert calls == ["t"] and waited == []
