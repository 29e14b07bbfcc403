"""A partition's log bounds (low, high watermark) from the broker, for auto.offset.reset decisions."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

Key = tuple[str, int]


def watermarks(consumer: Consumer, key: Key, timeout_s: float) -> tuple[int, int]:
    """(low, high); raises KafkaException (a timeout included) when the broker does not answer."""
    try:
        marks = consumer.get_watermark_offsets(TopicPartition(*key), timeout=timeout_s)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION:
            raise
        # A partition added after librdkafka cached the topic: refresh its metadata once.
        consumer.list_topics(key[0], timeout=timeout_s)
        marks = consumer.get_watermark_offsets(TopicPartition(*key), timeout=timeout_s)
    if marks is None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"watermarks of {key[0]}-{key[1]}"))
    return marks
