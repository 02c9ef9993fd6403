"""The shell examples of ``docs/cli.md``, run as written, in a subprocess each.

Each ```console block's ``$ `` lines run in order, in one scratch directory per page (with
``examples/`` linked in, as from the repository root). A command followed by lines starting
``relaxvm `` is an error example: it must exit with status 1 and print exactly those lines on
standard error. Every other command must exit with status 0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
_BLOCK = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """``(command, expected error lines)`` of every ``$`` line of the page's console blocks."""
    commands: list[tuple[str, list[str]]] = []
    for block in _BLOCK.findall(text):
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif line.strip():
                assert commands, f"output before any command in {PAGE}: {line}"
                commands[-1][1].append(line)
    return commands


def test_console_blocks_are_parsed() -> None:
    text = "```console\n$ relaxvm a\n$ relaxvm b\nrelaxvm b: error: x\n```\n```text\n$ no\n```\n"
    assert console_commands(text) == [("relaxvm a", []), ("relaxvm b", ["relaxvm b: error: x"])]


def test_cli_page_examples_run_as_written(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    bin_dir = str(Path(sys.executable).parent)  # relaxvm and python of this environment
    if shutil.which("relaxvm", path=bin_dir) is None:
        pytest.skip(f"no relaxvm script next to {sys.executable} (install the project)")
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env["PYTHONWARNINGS"] = "ignore"
    commands = console_commands(PAGE.read_text(encoding="utf-8"))
    assert len(commands) > 10
    for command, errors in commands:
        if "--number 20" in command:  # the long benchmark: fewer calls, same grammar
            command = command.replace("--number 20 --repeat 5", "--number 1 --repeat 1")
        result = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        if errors:
            assert result.returncode == 1, (command, result.stdout, result.stderr)
            assert result.stderr.splitlines() == errors, command
        else:
            assert result.returncode == 0, (command, result.stderr)
            assert result.stderr == "", (command, result.stderr)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_still_exits_0(flag: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "relaxvm", "run", flag],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0
    assert "--params W.npz" in result.stdout and "--arg NAME=VALUE" in result.stdout
