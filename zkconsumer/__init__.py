"""zkconsumer: Kafka's legacy ZooKeeper-coordinated high-level consumer, as a drop-in Python group member."""

__version__ = "0.1.0"  # first: modules below read it while the package is still importing

from zkconsumer.config.consumer_config import ConfigError, ConsumerConfig
from zkconsumer.connector import ConsumerConnector
from zkconsumer.consumer.stream import ConsumerError, ConsumerTimeout, KafkaStream, Message
from zkconsumer.coordinator.listener import ConsumerRebalanceFailed, ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import Blacklist, Whitelist
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
]
