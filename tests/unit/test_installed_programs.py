"""Every program the code, scripts and tests start is on the base list or installed by a `need` line.

Two halves of one guard: a static scan of the Python source for command lines written out literally
(fast, here), and scripts/check_programs.py over what a whole suite run recorded (catches command lines
built at run time; scripts/test.sh runs it last). Both fail naming the program.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.installed_programs import BASE_PROGRAMS, Need, needs_in, read_log, unaccounted
from zkconsumer.testing import program_log

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "setup-env.sh", ROOT / "scripts" / "test.sh"]
# Calls whose first argument is a command line: subprocess's, the network lab's `sh` and a host's
# run/popen/command, the KDC's `_run(program, *args)`.
_RUNNERS = {"run", "Popen", "sh", "check_call", "check_output", "call", "popen", "command", "_run"}
_ARGV_NAMES = {"argv", "cmd", "command"}
# The project's own console script (pip puts it in the venv), never a system program.
_OWN = {"zkconsumer"}


def _words(node: ast.expr) -> list[str] | None:
    """A literal command line's words (a placeholder for each computed one), or None if not literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return None
        return [
            e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else "<computed>" for e in node.elts
        ]
    return None


def literal_command_lines(source: str) -> list[tuple[int, list[str]]]:
    """(line, words) of each command line written out literally in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first = node.args[0]
            literal_list = isinstance(first, (ast.List, ast.Tuple))
            # A list is a command line for any runner; separate strings only for the KDC's `_run(program, *args)`
            # (a test's own `run("groups", ...)` helper takes CLI words, not a program).
            words = _words(first) if name in _RUNNERS and (literal_list or name == "_run") else None
            if words and not words[0].startswith("-"):
                found.append((node.lineno, words))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in _ARGV_NAMES and isinstance(node.value, ast.List):
                words = _words(node.value)
                if words and not words[0].startswith("-"):
                    found.append((node.lineno, words))
    return found


def programs_named_in_source() -> dict[str, str]:
    """program -> 'file:line' of its first literal command line under zkconsumer/, scripts/, tests/, spark_jobs/."""
    first: dict[str, str] = {}
    for folder in ("zkconsumer", "scripts", "tests", "spark_jobs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, words in literal_command_lines(path.read_text()):
                for program in program_log.programs_in(words):
                    if program not in _OWN:
                        first.setdefault(program, f"{path.relative_to(ROOT)}:{line}")
    return first


def project_needs() -> list[Need]:
    return [need for script in SCRIPTS for need in needs_in(script.read_text())]


def test_every_program_named_in_the_source_is_installed() -> None:
    named = programs_named_in_source()
    missing = unaccounted(named, project_needs())
    assert not missing, "started but never installed: " + ", ".join(f"{p} ({named[p]})" for p in missing)


def test_the_scan_sees_the_network_lab_programs() -> None:
    # The scan must reach the programs that once went uninstalled, including one behind `ip netns exec`.
    named = programs_named_in_source()
    assert {"nft", "ping", "ip", "openssl", "kdb5_util", "kadmin.local"} <= set(named)


def test_removing_a_need_line_is_caught() -> None:
    named = programs_named_in_source()
    for dropped in ("nft", "ping", "kadmin.local"):
        needs = [n for n in project_needs() if n.command != dropped]
        assert unaccounted(named, needs) == [dropped]


def test_need_lines_parse_with_package_and_reason() -> None:
    needs = needs_in(
        'need() {  # need <command> <debian package> <what for>\n  need nft nftables "the lab\'s firewall"\n'
    )
    assert needs == [Need("nft", "nftables", "the lab's firewall")]
    assert all(n.reason for n in project_needs()), "every need line says what the package is for"


def test_base_programs_each_have_a_reason() -> None:
    assert all(reason.strip() for reason in BASE_PROGRAMS.values())


def test_programs_behind_wrappers_and_shells() -> None:
    assert program_log.programs_in(["ip", "netns", "exec", "zkc-a", "nft", "-f", "-"]) == ["ip", "nft"]
    assert program_log.programs_in(["/usr/sbin/ip", "netns", "exec", "x", "/usr/bin/ping", "-c1"]) == ["ip", "ping"]
    assert program_log.programs_in(["/bin/sh", "-c", "nft list tables"], shell=True) == ["sh", "nft"]
    assert program_log.programs_in(["sh", "-c", "command -v nft"], shell=True) == ["sh"]  # a builtin runs nothing
    assert program_log.programs_in(["sh", "-c", "LC_ALL=C exec ping -c1 x"], shell=True) == ["sh", "ping"]
    assert program_log.programs_in([sys.executable, "-m", "pytest"]) == []  # the venv's own
    assert program_log.programs_in(["/tmp/x/venv/bin/pip", "install"]) == []  # a test's fresh venv


@given(st.lists(st.sampled_from(["nft", "ping", "ip", "sh", "java", "git", "Burrow"]), max_size=12))
def test_unaccounted_is_exactly_what_neither_list_has(started: list[str]) -> None:
    needs = [Need("java", "openjdk-17-jre-headless", "x"), Need("Burrow", "burrow", "y")]
    missing = unaccounted(started, needs)
    assert missing == sorted(set(started) - set(BASE_PROGRAMS) - {"java", "Burrow"})


def test_the_hook_records_what_a_process_starts(tmp_path: Path) -> None:
    log = tmp_path / "programs.log"
    code = (
        "import subprocess, os; import zkconsumer.testing; "
        "subprocess.run(['true']); subprocess.run('true', shell=True); os.system('sleep 0')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**_env(), program_log.ENV_VAR: str(log)}, timeout=60)
    started = read_log(log.read_text())
    assert set(started) == {"true", "sh", "sleep"}, started


def test_the_check_script_fails_naming_the_program(tmp_path: Path) -> None:
    log = tmp_path / "programs.log"
    log.write_text("ip\tip netns add x\nnft\tip netns exec x nft -f -\nnot-a-real-tool\tnot-a-real-tool --help\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_programs.py"), str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "programs=3 unaccounted=1 names=not-a-real-tool"
    missing = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_programs.py"), str(tmp_path / "none.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    (tmp_path / "empty.log").write_text("")
    empty = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_programs.py"), str(tmp_path / "empty.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.returncode == 2, "a run that recorded nothing has a broken hook"


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != program_log.ENV_VAR}
