"""Fails when a run started a system program that a fresh machine lacks and no `need` line installs.

    .venv/bin/python scripts/check_programs.py LOG [--scripts scripts/setup-env.sh scripts/test.sh]

LOG is what zkconsumer.testing.program_log recorded (scripts/test.sh sets ZKCONSUMER_PROGRAM_LOG for the
whole suite). Every program in it must be on the base list (tests/harness/installed_programs.py, each
with its reason) or installed by a `need` line of the scripts. Prints one line per program that is
neither, with the command line that first started it; the last line is machine-readable:

    programs=<n started> unaccounted=<n> [names=<a,b>]

Exit status 1 if any is unaccounted, 2 if the log is missing or empty (a whole suite starts java at least:
nothing recorded means a broken hook).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: tests/harness

from harness.installed_programs import needs_in, read_log, unaccounted  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument(
        "--scripts", nargs="+", type=Path, default=[ROOT / "scripts" / "setup-env.sh", ROOT / "scripts" / "test.sh"]
    )
    args = parser.parse_args(argv)
    if not args.log.is_file() or not args.log.read_text().strip():
        print(f"check_programs: {args.log} is missing or empty: no program was recorded (is the hook installed?)")
        print("programs=0 unaccounted=0 missing_log=1")
        return 2
    started = read_log(args.log.read_text())
    needs = [need for script in args.scripts for need in needs_in(script.read_text())]
    missing = unaccounted(started, needs)
    for name in missing:
        print(
            f"check_programs: '{name}' was started ({started[name]}) but is not on the base list and no `need` "
            f"line of {', '.join(str(s.relative_to(ROOT)) if s.is_relative_to(ROOT) else str(s) for s in args.scripts)} "
            "installs it: a fresh machine fails there"
        )
    names = f" names={','.join(missing)}" if missing else ""
    print(f"programs={len(started)} unaccounted={len(missing)}{names}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
