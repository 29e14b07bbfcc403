"""Fetching and delivery: the confluent-kafka fetcher, stream queues and iterators."""
