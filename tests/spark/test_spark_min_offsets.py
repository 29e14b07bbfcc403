"""minOffsetsPerTrigger / maxTriggerDelay on local Spark and the real cluster: a trigger with too little data
plans nothing until enough arrives or the delay passes (Spark's Kafka source's meaning)."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from spark_helpers import source_end, wait_until

from harness.spark_sink import parquet_query
from zkconsumer.testing import kafka

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]


def test_a_trigger_waits_for_min_offsets_until_the_delay_passes(
    spark, cluster, stream_reader, group_id, tmp_path
) -> None:
    topic = f"minoffsets-{group_id[-12:]}"
    cluster.create_topic(topic, 2)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=2)
    df = stream_reader(group_id, topic, startingOffsets="earliest", minOffsetsPerTrigger="40", maxTriggerDelay="60s")
    query = parquet_query(df, tmp_path)

    def total() -> int:
        return sum((source_end(query) or {}).values())

    try:
        wait_until(lambda: total() == 10, 90, "the first trigger to run what is there", query)
        # The delay counts from batch 0's planning, after its trigger started; on a loaded machine the
        # batch itself can take many seconds, so the window checked ends well before that + 60 s.
        batch0 = next(p for p in query.recentProgress if p["numInputRows"] > 0)
        planned = datetime.fromisoformat(batch0["timestamp"].replace("Z", "+00:00")).timestamp()
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=2, start=10)  # 10 < 40
        window_end = min(time.time() + 6.0, planned + 45.0)
        assert time.time() < window_end - 2.0, "batch 0 took too long to check anything"
        while time.time() < window_end:
            assert total() == 10, "a batch of 10 offsets ran before maxTriggerDelay although 40 are the minimum"
            time.sleep(0.2)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 30, partitions=2, start=20)  # now 40 wait
        wait_until(lambda: total() == 50, 60, "the batch once the minimum is there", query)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 4, partitions=2, start=50)
        wait_until(lambda: total() == 54, 180, "the batch once the delay has passed", query)
    finally:
        query.stop()
