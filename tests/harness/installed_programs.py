"""Pure: which programs the project may start — the base machine's and those a `need` line installs.

A fresh machine has only the base list below; everything else the code, scripts or tests execute must be
installed by a ``need <command> <debian package> <what for>`` line of ``scripts/setup-env.sh`` or
``scripts/test.sh``. ``scripts/check_programs.py`` holds the programs a suite run started (recorded by
``zkconsumer.testing.program_log``) against both; ``tests/unit/test_installed_programs.py`` does the
same for the programs named literally in the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# On every machine of the project's kind before setup-env.sh runs (Debian 12 with Python; the env
# skill's installed-*.txt lists them), each with why we may rely on it. Keep this short: anything not
# part of a minimal Debian with Python goes through a `need` line instead.
BASE_PROGRAMS: Mapping[str, str] = {
    "sh": "dash, Debian's /bin/sh: subprocess's shell=True",
    "bash": "bash: the project's scripts are bash scripts",
    "python": "Python itself (the venv's interpreter runs every script)",
    "python3": "Python itself",
    "true": "coreutils: a process that exits at once (the network lab's stale-pid test)",
    "sleep": "coreutils",
    "kill": "procps/bash: signals to test processes",
    "ip": "iproute2 (Debian priority important): namespaces, veth links and addresses of the network lab",
    "ss": "iproute2: the network lab resets the connections a fault cuts",
    "sysctl": "procps (priority important): the network lab turns IPv6 off on its links",
    "openssl": "openssl (with Python's ssl): the test kit's certificates for SSL and SASL_SSL listeners",
    "javac": "openjdk-17-jdk-headless (the base machine's Java 17 is the JDK): compiles the Scala members' Java "
    "harness; without it tests/harness/scala.py runs the compiler module of the JRE's java instead",
    "git": "git: the checkout itself; tests list the tracked files",
}

_NEED = re.compile(r"^\s*need\s+(\S+)\s+(\S+)\s+\"([^\"]*)\"", re.MULTILINE)


@dataclass(frozen=True)
class Need:
    """One `need` line: the command it makes sure of, the Debian package that brings it, and why."""

    command: str
    package: str
    reason: str


def needs_in(script_text: str) -> list[Need]:
    """The `need` lines of a shell script, in order (the function's own definition line is not one)."""
    return [Need(*m.groups()) for m in _NEED.finditer(script_text)]


def unaccounted(started: Iterable[str], needs: Iterable[Need], base: Mapping[str, str] = BASE_PROGRAMS) -> list[str]:
    """The programs of `started` that are neither on the base list nor installed by a `need` line, sorted."""
    installed = {n.command for n in needs}
    return sorted({p for p in started if p not in base and p not in installed})


def read_log(text: str) -> dict[str, str]:
    """A program log (program<TAB>command line per line) -> program -> the first command line that started it."""
    first: dict[str, str] = {}
    for line in text.splitlines():
        program, _, command = line.partition("\t")
        if program:
            first.setdefault(program, command)
    return first
