"""The ``console`` examples of the README and of ``docs/*.md``, run for real: check that their output is what the
commands print, or write it.

    python docs/readme_examples.py            # exit 1 and a diff if an example's output is out of date
    python docs/readme_examples.py --write    # run every example and put its real output in its file

A ``console`` block holds commands (``$ gpu-preempt ...``, ``#`` comments allowed) each followed by its output.
The commands run from a scratch folder that sees the repository's ``fixtures/`` and ``docs/``, so files they
write go nowhere. A line ``...`` in an output stands for any number of lines
(such blocks are kept as written by ``--write``). Solve times (``5.5 ms``) vary from run to run and are compared
as ``N ms``. ``tests/test_readme.py`` runs the check.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
"""The files whose console examples are checked."""
_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)
_TIMES = re.compile(r"\d+(?:\.\d+)? ms\b")


@dataclass
class Example:
    """One command of a console block and the output the README shows for it."""

    command: str
    shown: list[str]

    @property
    def elided(self) -> bool:
        return "..." in self.shown


def examples(text: str) -> list[list[Example]]:
    """Every console block of ``text``, as its examples in order."""
    found = []
    for block in _BLOCK.findall(text):
        items: list[Example] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                items.append(Example(line[2:], []))
            elif items:
                items[-1].shown.append(line)
        found.append(items)
    return found


def run(command: str, cwd: Path) -> list[str]:
    """The lines ``command`` prints (stdout, then stderr), run with the installed ``gpu-preempt``."""
    argv = shlex.split(command, comments=True)
    if argv[0] != "gpu-preempt":
        raise ValueError(f"a README example runs gpu-preempt, not {argv[0]!r}: {command}")
    executable = Path(sys.executable).with_name("gpu-preempt")
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "GPU_PREEMPT_HEARTBEAT": "off"}  # output, not progress
    done = subprocess.run([str(executable), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True)
    return [line.rstrip() for line in (done.stdout + done.stderr).rstrip("\n").splitlines()]


def matches(shown: list[str], printed: list[str]) -> bool:
    """``printed`` as ``shown`` says, ``...`` matching any lines and solve times compared as ``N ms``."""
    pattern = "".join(
        "(?:[^\n]*\n)*?" if line == "..." else re.escape(_TIMES.sub("N ms", line)) + "\n" for line in shown
    )
    text = "".join(_TIMES.sub("N ms", line) + "\n" for line in printed)
    return re.fullmatch(pattern, text) is not None


def scratch() -> tempfile.TemporaryDirectory[str]:
    folder = tempfile.TemporaryDirectory()
    for name in ("fixtures", "docs"):
        (Path(folder.name) / name).symlink_to(ROOT / name)
    return folder


def check() -> list[str]:
    """A diff for each example whose output differs from what its page shows."""
    problems = []
    with scratch() as folder:
        for page in PAGES:
            name = str(page.relative_to(ROOT))
            for block in examples(page.read_text(encoding="utf-8")):
                for item in block:
                    printed = run(item.command, Path(folder))
                    if not matches(item.shown, printed):
                        diff = difflib.unified_diff(item.shown, printed, name, "printed", lineterm="")
                        problems.append(f"{name}: $ {item.command}\n" + "\n".join(diff))
    return problems


def write() -> None:
    """Put the real output of every example without ``...`` in its page."""
    with scratch() as folder:

        def refresh(match: re.Match[str]) -> str:
            lines = []
            for item in examples(match.group(0))[0]:
                printed = run(item.command, Path(folder))
                lines += [f"$ {item.command}", *(item.shown if item.elided else printed)]
            return "```console\n" + "\n".join(lines) + "\n```"

        for page in PAGES:
            page.write_text(_BLOCK.sub(refresh, page.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    else:
        found = check()
        print("\n\n".join(found) if found else "every example prints what it shows")
        sys.exit(1 if found else 0)
