"""Records every system program this process starts, for the check that the project installs each one.

A CPython audit hook sees every ``subprocess.Popen`` (asyncio's too), ``os.exec*``, ``os.posix_spawn``
and ``os.system`` call. When the environment names a log file in ``ZKCONSUMER_PROGRAM_LOG``, importing
``zkconsumer.testing`` installs the hook, and each start of a system program appends one line,
``program<TAB>command line``, to that file. ``scripts/test.sh`` sets the variable for the whole suite
(child processes inherit it, so scripts the tests run record too) and checks the log at its end
(``scripts/check_programs.py``): a test that starts a program no ``need`` line installs fails the run
on any machine, not only on a fresh one.

Only system programs are recorded: a bare name found on PATH, or a path under a system directory.
Programs inside a virtualenv, the checkout or a temporary folder (Spark's launch scripts, a test's
fresh venv) come with what pip or the test made, not with the machine.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence

ENV_VAR = "ZKCONSUMER_PROGRAM_LOG"
SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/etc/alternatives/")
# Commands that run the program named later in their argument list (the network lab runs everything
# in a namespace through `ip netns exec NAME ...`): both are recorded.
_WRAPPERS = {("ip", "netns", "exec"): 4}

# What a shell script may start with that runs no program (the lab asks `command -v TOOL`).
_SHELL_BUILTINS = frozenset({"command", "cd", "export", "set", "source", ".", "test", "[", "echo", "printf", "type"})

_installed_for: str | None = None


def programs_in(argv: Sequence[str], shell: bool = False) -> list[str]:
    """The programs a command line starts: its first word and, behind a wrapper, the wrapped program.

    Names only; an argument list whose first word is a path outside the system directories yields
    nothing (the program came with the project, pip or the test, not with the machine). With `shell`,
    argv is ``[sh, -c, script]`` and the script's first word counts too.
    """
    if not argv:
        return []
    found = []
    head = _system_name(argv[0])
    if head is not None:
        found.append(head)
    if shell and len(argv) >= 3 and argv[1] == "-c":
        try:
            words = shlex.split(argv[2])
        except ValueError:
            words = argv[2].split()
        while words and ("=" in words[0] and not words[0].startswith("=") or words[0] == "exec"):
            words = words[1:]  # VAR=value prefixes and `exec` run the program after them
        if words and words[0] not in _SHELL_BUILTINS:
            found.extend(programs_in(words))
        return found
    for prefix, index in _WRAPPERS.items():
        head_words = tuple(_system_name(w) or w for w in argv[: len(prefix)])
        if head_words == prefix and len(argv) > index:
            found.extend(programs_in(argv[index:]))
    return found


def _system_name(word: str) -> str | None:
    """`word` as a system program's name, or None when it is the project's own (or not a program)."""
    if not word:
        return None
    if "/" not in word:
        found = shutil.which(word)  # a bare name pip put in the venv (the zkconsumer command) is ours
        return None if found and os.path.abspath(found).startswith(sys.prefix + os.sep) else word
    path = os.path.abspath(word)
    if path.startswith(sys.prefix + os.sep) or not path.startswith(SYSTEM_DIRS):
        return None
    return os.path.basename(path)


def record(log_path: str, argv: Sequence[str], shell: bool = False) -> None:
    """Append the system programs `argv` starts to `log_path`, one line each (O_APPEND: one write a line)."""
    names = programs_in(argv, shell)
    if not names:
        return
    line = " ".join(argv)[:300].replace("\t", " ").replace("\n", " ")
    text = "".join(f"{name}\t{line}\n" for name in names)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _argv_of(event: str, args: tuple[object, ...]) -> tuple[list[str], bool] | None:
    """The command line an audit event starts, and whether it runs through a shell; None for other events."""
    if event == "subprocess.Popen":
        executable, cmd = args[0], args[1]
        words = [cmd] if isinstance(cmd, (str, bytes, os.PathLike)) else list(cmd)  # type: ignore[call-overload]
        text = [os.fsdecode(w) for w in words]
        if executable is not None:
            text[0] = os.fsdecode(executable)  # type: ignore[arg-type]
        return text, len(text) >= 3 and text[1] == "-c" and os.path.basename(text[0]) in ("sh", "bash")
    if event in ("os.exec", "os.posix_spawn"):
        path, argv = args[0], args[1]
        text = [os.fsdecode(w) for w in argv]  # type: ignore[attr-defined]
        return [os.fsdecode(path), *text[1:]], False  # type: ignore[arg-type]
    if event == "os.system":
        return ["sh", "-c", os.fsdecode(args[0])], True  # type: ignore[arg-type]
    return None


def install(log_path: str | None = None) -> bool:
    """Install the recording hook once per process (audit hooks cannot be removed); True if recording."""
    global _installed_for
    path = log_path or os.environ.get(ENV_VAR)
    if not path:
        return False
    if _installed_for is not None:
        return True
    _installed_for = path

    def hook(event: str, args: tuple[object, ...]) -> None:
        try:
            started = _argv_of(event, args)
            if started is not None:
                record(path, *started)
        except Exception as exc:  # a failing audit hook would fail the caller's Popen: report, never raise
            print(f"zkconsumer.testing.program_log: could not record {event}: {exc!r}", file=sys.stderr)

    sys.addaudithook(hook)
    return True
