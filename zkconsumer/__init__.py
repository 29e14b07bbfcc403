"""zkconsumer: Kafka's legacy ZooKeeper-coordinated high-level consumer, as a drop-in Python group member."""

from zkconsumer.config.consumer_config import ConfigError, ConsumerConfig
from zkconsumer.connector import ConsumerConnector
from zkconsumer.consumer.chunks import Message
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import Blacklist, Whitelist
from zkconsumer.errors import ConsumerError, ConsumerRebalanceFailed, ConsumerTimeout
from zkconsumer.version import __version__
from zkconsumer.zookeeper.group import RegistrationConflict
from zkconsumer.zookeeper.znodes import ZkDataError

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
