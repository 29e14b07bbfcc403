"""Shared pytest setup: the real-cluster fixtures (zkconsumer's pytest plugin) for every test."""

# Also registered through the pytest11 entry point (named after the module, so pytest takes it once);
# named here for PYTEST_DISABLE_PLUGIN_AUTOLOAD and installs that predate the entry point.
pytest_plugins = ["zkconsumer.testing.pytest_plugin"]
