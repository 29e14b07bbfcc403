"""zkconsumer: Kafka's legacy ZooKeeper-coordinated high-level consumer, as a drop-in Python group member."""

from zkconsumer.config.checks import ConfigError
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.connector import ConsumerConnector
from zkconsumer.consumer.chunks import Message
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import Blacklist, Whitelist
from zkconsumer.errors import (
    ConsumerError,
    ConsumerRebalanceFailed,
    ConsumerTimeout,
    RegistrationConflict,
    ZkDataError,
)
from zkconsumer.version import __version__

__all__ = [
    "Blacklist",
    "ConfigError",
    "ConsumerConfig",
    "ConsumerConnector",
    "ConsumerError",
    "ConsumerRebalanceFailed",
    "ConsumerRebalanceListener",
    "ConsumerTimeout",
    "KafkaStream",
    "Message",
    "RegistrationConflict",
    "Whitelist",
    "ZkDataError",
    "__version__",
]
