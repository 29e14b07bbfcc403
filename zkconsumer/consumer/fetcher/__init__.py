"""The fetcher: one confluent-kafka Consumer whose fetched messages are routed, chunk by chunk, into stream queues."""

from zkconsumer.consumer.fetcher.commands import ConsumerProxy
from zkconsumer.consumer.fetcher.fetcher import Fetcher
from zkconsumer.consumer.fetcher.partition_fetcher import CurrentFetcher, NoFetcher, PartitionFetcher
from zkconsumer.consumer.fetcher.settings import FetchSettings

__all__ = ["ConsumerProxy", "CurrentFetcher", "FetchSettings", "Fetcher", "NoFetcher", "PartitionFetcher"]
