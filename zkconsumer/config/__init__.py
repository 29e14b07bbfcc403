"""Consumer properties: names, defaults, validation, the .properties reader, release quirks.

`ConsumerConfig` and `ConfigError` are re-exported here (and from `zkconsumer`)."""

from zkconsumer.config.checks import ConfigError
from zkconsumer.config.consumer_config import ConsumerConfig

__all__ = ["ConfigError", "ConsumerConfig"]
