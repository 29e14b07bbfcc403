"""RepeatFilter: repeated librdkafka lines (differing only in numbers) pass once per interval, with a count."""

from __future__ import annotations

import logging

from zkconsumer.consumer.log_throttle import RepeatFilter, throttled_logger


def _record(text: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("t", logging.ERROR, __file__, 1, text, args, None)


def test_repeats_pass_once_per_interval_and_the_next_says_how_many_were_dropped() -> None:
    now = [0.0]
    f = RepeatFilter(30.0, clock=lambda: now[0])
    line = "%s [%s] %s"
    assert f.filter(_record(line, "FAIL", "rdkafka#consumer-1", "Connect to 127.0.0.1:4000 failed (after 0ms)"))
    for ms in range(1, 20):
        now[0] += 0.05
        assert not f.filter(
            _record(line, "FAIL", "rdkafka#consumer-1", f"Connect to 127.0.0.1:4000 failed (after {ms}ms)")
        )
    assert f.filter(_record(line, "ERROR", "rdkafka#consumer-1", "something else"))  # another shape passes
    now[0] = 31.0
    passed = _record(line, "FAIL", "rdkafka#consumer-1", "Connect to 127.0.0.1:4000 failed (after 7ms)")
    assert f.filter(passed)
    assert passed.getMessage().endswith("(19 similar lines in the last 30s)")
    now[0] = 62.0
    quiet = _record(line, "FAIL", "rdkafka#consumer-1", "Connect to 127.0.0.1:4000 failed (after 7ms)")
    assert f.filter(quiet) and "similar" not in quiet.getMessage()


def test_throttled_logger_attaches_one_filter() -> None:
    a = throttled_logger("zkconsumer.test.throttle")
    b = throttled_logger("zkconsumer.test.throttle")
    assert a is b and sum(isinstance(f, RepeatFilter) for f in a.filters) == 1
