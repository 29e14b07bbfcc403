"""Run a page's blocks as a reader would: shell in bash, Python in a given interpreter, outputs compared."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from docs_blocks import Block, missing_output

# A Python block's run ends with this exception from its prelude as a success (see Runner.run_python).
_WRAPPER = """\
import sys
{prelude}
_source = open({path!r}).read()
try:
    exec(compile(_source, {where!r}, "exec"), {{**globals(), "__name__": "__main__"}})
except DocsDone as done:
    print(f"[docs-run: stopped by the test: {{done}}]", file=sys.stderr)
"""
_NO_PRELUDE = "class DocsDone(Exception):\n    pass\n"
_STATUS = "echo $?"  # in a session block: the exit status of the command before


class BlockFailed(AssertionError):
    """A block exited non-zero, ran too long or printed other than the page shows."""


@dataclass
class Runner:
    """Runs blocks with one environment; `substitutions` replace the page's example values (addresses)."""

    python: Path
    env: dict[str, str]
    cwd: Path
    substitutions: dict[str, str] = field(default_factory=dict)
    timeout: float = 90.0
    ran: list[str] = field(default_factory=list)  # "page:line what", for the report

    def prepare(self, text: str) -> str:
        for example in sorted(self.substitutions, key=len, reverse=True):
            text = text.replace(example, self.substitutions[example])
        return text

    def run_shell(self, block: Block) -> str:
        """Run each command of a shell block; its output, stdout and stderr as a terminal shows them,
        must hold what the page shows after it. A command followed by ``echo $?`` may exit non-zero:
        ``echo $?`` gives its exit status, which must be exactly the one the page shows."""
        commands = block.commands()
        output, status = "", None
        for index, (command, expected) in enumerate(commands):
            if command.strip() == _STATUS:
                if status is None:
                    raise BlockFailed(f"{block.where}: `echo $?` must follow a command of the same block")
                shown = [line.strip() for line in expected if line.strip()]
                if shown != [str(status)]:
                    raise BlockFailed(f"{block.where}: the page shows exit status {shown}, the command exited {status}")
                output, status = f"{status}\n", 0
                continue
            status_shown = index + 1 < len(commands) and commands[index + 1][0].strip() == _STATUS
            output, status = self._run(
                block,
                ["bash", "-euo", "pipefail", "-c", self.prepare(command)],
                command,
                terminal=True,
                check=not status_shown,
            )
            missing = missing_output(expected, output)
            if missing:
                raise BlockFailed(
                    f"{block.where}: `{command}` printed\n{output}\nwhich lacks (numbers and paths aside) "
                    + "\n".join(missing)
                )
            self._learn(expected, output)
        return output

    def write_file(self, block: Block) -> Path:
        """Save a ``docs-run: file <name>`` block where the blocks run, as the page tells the reader to."""
        path = self.cwd / block.note
        path.write_text(self.prepare(block.text))
        self.ran.append(f"{block.where} saved as {block.note}")
        return path

    def run_python(self, block: Block, prelude: str = "", expected: Block | None = None) -> str:
        """Run a Python block as a script after `prelude`, which may define names the page leaves to
        the reader and raise DocsDone to end the script as a success; check `expected` (an output block)."""
        script = self.cwd / f"docs_{Path(block.page).stem}_{block.line}.py"
        script.write_text(self.prepare(block.text))
        wrapper = script.with_suffix(".run.py")
        wrapper.write_text(_WRAPPER.format(prelude=prelude or _NO_PRELUDE, path=str(script), where=block.where))
        stdout, _ = self._run(block, [str(self.python), str(wrapper)], f"python {script.name}")
        if expected is not None:
            missing = missing_output(expected.text.splitlines(), stdout)
            if missing:
                raise BlockFailed(
                    f"{block.where}: printed\n{stdout}\nwhere {expected.where} shows (numbers and paths aside) "
                    + "\n".join(missing)
                )
        return stdout

    def _run(
        self, block: Block, argv: list[str], what: str, terminal: bool = False, check: bool = True
    ) -> tuple[str, int]:
        """stdout (`terminal`: with stderr, in the order written, as a terminal shows them) and the
        exit status; a non-zero one fails the block unless not `check`."""
        env = dict(self.env, PYTHONUNBUFFERED="1") if terminal else self.env
        with subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if terminal else subprocess.PIPE,
            text=True,
            start_new_session=True,  # a hung block is killed with all it started
        ) as process:
            try:
                stdout, stderr = process.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                stdout, stderr = process.communicate()
                raise BlockFailed(
                    f"{block.where}: `{what}` still ran after {self.timeout:.0f} s; killed. Output:\n{stdout}{stderr or ''}"
                ) from None
        stderr = stderr or ""
        self.ran.append(f"{block.where} {what}")
        print(f"--- {block.where} {what} (exit {process.returncode})\n{stdout}{stderr}")  # shown by pytest -rP
        if check and process.returncode != 0:
            raise BlockFailed(f"{block.where}: `{what}` exited {process.returncode}:\n{stdout}{stderr}")
        return stdout, process.returncode

    def _learn(self, expected: list[str], stdout: str) -> None:
        """key=value lines the page shows (zookeeper.connect=..., as `up` prints them) stand for what this run printed."""
        actual = dict(re.findall(r"^([\w.]+)=(\S+)$", stdout, re.MULTILINE))
        for line in expected:
            shown = re.fullmatch(r"([\w.]+)=(\S+)", line.strip())
            if shown and shown[1] in actual:
                self.substitutions[shown[2]] = actual[shown[1]]
