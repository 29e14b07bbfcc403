"""The `zkconsumer` ops command line: console consumer, group/offset tools, rebalance check, live view."""
