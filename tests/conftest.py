"""Shared pytest setup: the real-cluster fixtures (zkconsumer's pytest plugin) for every test."""

# The plugin is opt-in (no pytest11 entry point: an installed zkconsumer adds no fixtures to other
# projects' tests); this project's own tests load it here, as docs/testing.md tells users to.
pytest_plugins = ["zkconsumer.testing.pytest_plugin"]
