"""Shared pytest setup: the real-cluster fixtures (zkconsumer's pytest plugin) for every test, and Hypothesis' profile."""

from hypothesis import settings

# The plugin is opt-in (no pytest11 entry point: an installed zkconsumer adds no fixtures to other
# projects' tests); this project's own tests load it here, as docs/testing.md tells users to.
pytest_plugins = ["zkconsumer.testing.pytest_plugin"]

# Property tests check properties, not speed: Hypothesis' default 200 ms deadline per example is a
# timed assertion that a loaded 2-core machine fails at random (seen beside a CPU-hog chaos run).
settings.register_profile("zkconsumer", deadline=None)
settings.load_profile("zkconsumer")
