"""The package's version, written once: setup.cfg reads it (attr:), the package and the CLI import it."""

__version__ = "0.1.0"
