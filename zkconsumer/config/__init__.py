"""Consumer properties: names, defaults, validation, the .properties reader, release quirks.

`ConsumerConfig` and `ConfigError` are re-exported here (and from `zkconsumer`)."""

from zkconsumer.config.consumer_config import ConfigError, ConsumerConfig

__all__ = ["ConfigError", "ConsumerConfig"]
