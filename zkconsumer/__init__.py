"""zkconsumer: Kafka's legacy ZooKeeper-coordinated high-level consumer, as a drop-in Python group member."""

__version__ = "0.1.0"  # first: modules below read it while the package is still importing

from zkconsumer.config import ConfigError, ConsumerConfig
from zkconsumer.connector import ConsumerConnector
from zkconsumer.group import RegistrationConflict
from zkconsumer.listener import ConsumerRebalanceFailed, ConsumerRebalanceListener
from zkconsumer.stream import ConsumerError, ConsumerTimeout, KafkaStream, Message
from zkconsumer.subscription import Blacklist, Whitelist
from zkconsumer.zkdata import ZkDataError

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
