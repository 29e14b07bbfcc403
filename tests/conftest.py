"""Shared pytest setup: the real-cluster fixtures (zkconsumer's pytest plugin) for every test."""

import sys

PLUGIN = "zkconsumer.testing.pytest_plugin"

# pytest loads the plugin before any conftest when zkconsumer is installed from a setup.cfg with the
# pytest11 entry point (or with -p); naming it here too would register it twice, which is an error.
# An install made before the entry point existed (an editable one not reinstalled since), or
# PYTEST_DISABLE_PLUGIN_AUTOLOAD, leaves it unloaded: then this conftest loads it.
if PLUGIN not in sys.modules:
    pytest_plugins = [PLUGIN]
