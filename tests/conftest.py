"""Shared pytest setup: the real-cluster fixtures and the test markers."""

pytest_plugins = ["zkconsumer.testing.fixtures"]
