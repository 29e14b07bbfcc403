"""librdkafka's log lines reach Python logging through the clients' "logger", never raw to stderr."""

from __future__ import annotations

import logging
import re
import socket
import time

import pytest

RAW_LINE = re.compile(r"^%\d\|", re.M)  # librdkafka's own stderr format: %<level>|<time>|<facility>|...


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refusals(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name and "Connection refused" in r.getMessage()]


def _capture(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # The RepeatFilter may hold back this shape of line if an earlier test logged it.
    monkeypatch.setattr(logging.getLogger(name), "filters", [])
    caplog.set_level(logging.INFO, logger=name)


def _assert_refusal_logged_not_printed(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], name: str
) -> None:
    assert _refusals(caplog, name), [r.getMessage() for r in caplog.records]
    assert not RAW_LINE.search(capfd.readouterr().err)


def test_a_fetcher_logs_librdkafka_lines_through_python_logging(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
    from zkconsumer.consumer.fetcher import Fetcher, FetchSettings

    name = "zkconsumer.consumer.fetcher.librdkafka"
    _capture(caplog, monkeypatch, name)
    fetcher = Fetcher(FetchSettings(f"127.0.0.1:{_closed_port()}", "g", "c"), name="t", on_error=lambda exc: None)
    fetcher.start()
    try:
        fetcher.assign([PartitionTopicInfo("t", 0, "t-0", StreamQueue(1), 0)])  # consume() serves the log lines
        deadline = time.monotonic() + 15
        while not _refusals(caplog, name) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        fetcher.close()
    refused = _refusals(caplog, name)
    assert refused and refused[0].levelno >= logging.WARNING, [r.getMessage() for r in caplog.records]
    assert refused[0].getMessage().startswith("FAIL [c#consumer-")  # facility, client.id#consumer-n
    assert not RAW_LINE.search(capfd.readouterr().err)


def test_a_spark_read_logs_librdkafka_lines_through_python_logging(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from zkconsumer.spark.kafka_read import FetchTimeoutError, read_task
    from zkconsumer.spark.offsets import OffsetRange

    name = "zkconsumer.spark.kafka_read.librdkafka"
    _capture(caplog, monkeypatch, name)
    part = OffsetRange("t", 0, 0, 10, f"127.0.0.1:{_closed_port()}")
    with pytest.raises(FetchTimeoutError):
        list(read_task([part], {"group.id": "g"}, batch_size=10, fail_on_data_loss=True, poll_timeout_s=1.0))
    _assert_refusal_logged_not_printed(caplog, capfd, name)


def test_the_testing_admin_helpers_log_librdkafka_lines_through_python_logging(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """zkconsumer.testing.kafka polls its AdminClient after each request: the queued lines reach the logger."""
    from zkconsumer.testing import kafka

    name = "zkconsumer.testing.librdkafka"
    _capture(caplog, monkeypatch, name)
    with pytest.raises(Exception):  # noqa: B017 - no broker: the request times out (or fails)
        kafka.delete_topic(f"127.0.0.1:{_closed_port()}", "t", timeout=1.0)
    _assert_refusal_logged_not_printed(caplog, capfd, name)
