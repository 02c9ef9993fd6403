"""The Python examples in the README and the IR docs run as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from relaxvm.testing import isolated_plugins

ROOT = Path(__file__).resolve().parents[2]
# Pages whose ```python blocks are complete programs (other pages show API fragments).
RUNNABLE_PAGES = [
    "README.md",
    "docs/builtins.md",
    "docs/ir.md",
    "docs/ir_arith.md",
    "docs/testing.md",
]


def python_blocks(page: str) -> list[tuple[str, str]]:
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [(f"{page}[{i}]", code) for i, code in enumerate(blocks)]


EXAMPLES = [example for page in RUNNABLE_PAGES for example in python_blocks(page)]


def test_every_runnable_page_has_examples():
    assert {name.split("[")[0] for name, _ in EXAMPLES} == set(RUNNABLE_PAGES)


@pytest.mark.parametrize(("name", "code"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_example_runs(name, code, tmp_path, monkeypatch):
    # Run from a real file, as a user would: the script parser reads decorated source through
    # inspect, and files the example writes land in a scratch directory.
    path = tmp_path / (re.sub(r"\W", "_", name) + ".py")
    path.write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # A fresh registry per example: an example may override a builtin and put it back, which
    # would otherwise leave the original attributed to "user code" for later tests.
    with isolated_plugins():
        runpy.run_path(str(path), run_name="__docs__")
