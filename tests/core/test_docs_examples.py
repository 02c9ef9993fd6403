"""Every Python example in README.md and docs/*.md runs as written.

A page is a notebook: its ```python blocks run in order in one namespace, from a scratch
directory, inside ``relaxvm.testing.isolated_plugins()`` (a block may override a builtin). Each
block is one test, ``docs/ir.md[3]``; selecting one block runs the blocks before it first, as
set-up. ```pycon blocks run as doctests in the same namespace. A block preceded by
``<!-- docs: skip (why) -->`` is reported as skipped with that reason. See ``_docs_blocks``.
"""

from __future__ import annotations

import doctest
import io
import json
import os
import re
import subprocess
import sys
import traceback
import types
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from relaxvm import transform
from relaxvm.ir.relax.op import registry as op_table
from relaxvm.testing import isolated_plugins
from relaxvm.transform import pipeline as pipeline_table

from ._docs_blocks import (
    Block,
    attribute_chains,
    fences,
    page_blocks,
    shadow_source,
    skip_markers,
    suspicious_languages,
)

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))]
BLOCKS = [block for page in PAGES for block in page_blocks(ROOT, page)]


def _restore(table: dict[str, Any], saved: dict[str, Any]) -> None:
    table.clear()
    table.update(saved)


class _PageRun:
    """The state of one page being run: its namespace (a module whose file is the page's
    shadow source, so ``inspect`` finds what the blocks define), its scratch directory, its
    plugin isolation, and which blocks have run."""

    def __init__(self, page: str, scratch: Path, root: Path = ROOT) -> None:
        self.page = page
        self.root = root
        self.scratch = scratch
        self.blocks = page_blocks(root, page)
        text = (root / page).read_text(encoding="utf-8")
        self.shadow = scratch / (re.sub(r"\W", "_", page) + ".py")
        self.shadow.write_text(shadow_source(text, self.blocks), encoding="utf-8")
        self.module_name = "_relaxvm_docs_" + re.sub(r"\W", "_", page)
        self.module = types.ModuleType(self.module_name)
        self.module.__file__ = str(self.shadow)
        # Registered so that classes a block defines have a module (dataclasses, inspect and
        # pickle look it up in sys.modules).
        sys.modules[self.module_name] = self.module
        self.failed: dict[int, bool] = {}
        self._stack = ExitStack()
        self._stack.enter_context(isolated_plugins())
        # Named pipelines and ops are process-global and not plugin state: a page that
        # registers one (compiler.md, ops.md) must be able to run again, and must not leave it
        # to later tests.
        transform.list_pipelines()  # the built-in ones are registered on first use
        for table in (pipeline_table._pipelines, op_table._REGISTRY):
            self._stack.callback(_restore, table, dict(table))

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            sys.modules.pop(self.module_name, None)

    def run(self, block: Block) -> str | None:
        """Run one block; the failure report (``None`` when it passed)."""
        cwd = os.getcwd()
        os.chdir(self.scratch)
        try:
            if block.fence.language == "pycon":
                report = self._run_doctest(block)
            else:
                report = self._run_python(block)
        finally:
            os.chdir(cwd)
        self.failed[block.index] = report is not None
        return report

    def _run_python(self, block: Block) -> str | None:
        # Padding keeps the page's line numbers in tracebacks and script errors.
        code = "\n" * (block.fence.start_line - 1) + block.fence.code
        try:
            exec(compile(code, str(self.shadow), "exec"), self.module.__dict__)
        except Exception as err:
            # The first frame is this exec: the report starts in the page.
            tb = err.__traceback__.tb_next if err.__traceback__ is not None else None
            text = "".join(traceback.format_exception(type(err), err, tb))
            return text.replace(str(self.shadow), self.page)
        return None

    def _run_doctest(self, block: Block) -> str | None:
        test = doctest.DocTestParser().get_doctest(
            block.fence.code,
            self.module.__dict__,
            block.test_id,
            str(self.root / self.page),
            block.fence.fence_line,
        )
        out = io.StringIO()
        runner = doctest.DocTestRunner(
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
        )
        runner.run(test, out=out.write, clear_globs=False)
        return out.getvalue() if runner.failures else None


class _Runner:
    """Runs pages one at a time; a page's isolation ends when another page starts or at the
    end of the module."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.current: _PageRun | None = None

    def page(self, page: str) -> _PageRun:
        if self.current is not None and self.current.page != page:
            self.close()
        if self.current is None:
            self.current = _PageRun(page, self.factory.mktemp(re.sub(r"\W", "_", page)))
        return self.current

    def close(self) -> None:
        if self.current is not None:
            current, self.current = self.current, None
            current.close()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Runner]:
    pages = _Runner(tmp_path_factory)
    yield pages
    pages.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[block.test_id for block in BLOCKS])
def test_docs_block(block: Block, runner: _Runner) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"{block.test_id} (line {block.fence.start_line}): {block.skip_reason}")
    page = runner.page(block.page)
    # Earlier blocks are set-up: run any that did not run yet (this block selected alone, or a
    # page revisited), in order.
    for earlier in page.blocks[: block.index]:
        if earlier.skip_reason is None and earlier.index not in page.failed:
            page.run(earlier)
    report = page.run(block)
    if report is not None:
        failed = [f"[{i}]" for i, bad in sorted(page.failed.items()) if bad and i < block.index]
        note = f"\n(earlier blocks of this page failed too: {', '.join(failed)})" if failed else ""
        pytest.fail(f"docs example failed: {block.where}{note}\n\n{report}", pytrace=False)


def test_pages_are_collected() -> None:
    # README and every page under docs/ take part, new pages included, without a list to edit.
    assert "README.md" in PAGES
    assert {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")} <= set(PAGES)
    assert any(block.page == "README.md" for block in BLOCKS)
    assert len({block.page for block in BLOCKS}) >= 10


def test_no_misspelt_python_fences() -> None:
    # ```py3 or ```pyhton would not run, and the example would drift unnoticed.
    bad = [
        f"{page}:{fence.fence_line}: ```{fence.language} (write ```python, or ```text for output)"
        for page in PAGES
        for fence in suspicious_languages((ROOT / page).read_text(encoding="utf-8"))
    ]
    assert bad == []


def test_every_skip_marker_has_a_reason_and_a_block() -> None:
    bad = []
    for page in PAGES:
        for marker in skip_markers((ROOT / page).read_text(encoding="utf-8")):
            if marker.reason is None:
                bad.append(f"{page}:{marker.line}: {marker.text} has no '(reason)'")
            if marker.fence is None or marker.fence.language not in ("python", "pycon"):
                bad.append(f"{page}:{marker.line}: {marker.text} is not before a python block")
    assert bad == []


_RESOLVE = """
import json, sys
import relaxvm
bad = []
for chain in json.loads(sys.argv[1]):
    obj = relaxvm
    for part in chain.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as err:
            bad.append(f"relaxvm.{chain}: {type(err).__name__}: {err}")
            break
print(json.dumps(bad))
"""


def test_relaxvm_attributes_in_examples_work_in_a_fresh_process() -> None:
    # The blocks run in this process, where earlier tests imported every submodule; a user's
    # fresh `import relaxvm` must reach `relaxvm.transform.X` (and every other spelling the
    # examples use) as well.
    where: dict[str, str] = {}
    for block in BLOCKS:
        for line, chain in attribute_chains(block.fence.code):
            where.setdefault(chain, f"{block.page}:{block.fence.start_line + line - 1}")
    assert "compile" in where  # the scan finds what the examples use
    done = subprocess.run(
        [sys.executable, "-c", _RESOLVE, json.dumps(sorted(where))],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    bad = json.loads(done.stdout.splitlines()[-1])
    assert [f"{where[item.split(':')[0][len('relaxvm.') :]]}: {item}" for item in bad] == []


def test_attribute_chains_skip_imports_and_strings() -> None:
    code = (
        "import relaxvm.testing\n"
        "from relaxvm import transform\n"
        "x = relaxvm.tir.Var('n')  # relaxvm.not_this\n"
        "plugins = ['relaxvm.testing.conformance']\n"
        "y = relaxvm.compile(m).relaxvm.x\n"
        "z = (relaxvm\n    .relax.build)\n"
    )
    assert attribute_chains(code) == [(3, "tir.Var"), (5, "compile"), (6, "relax.build")]


# The collector's own parsing: each of these would let an example escape the run if wrong.
PAGE = """\
Intro.

```python
x = 1
```

<!-- docs: skip (needs a GPU) -->
```python
import gpu
```

<!-- docs: skip -->

```python
y = x + 1
```

```pyhton
z = 3
```

```py3
z = 4
```

```Python
z = 5
```

```text
output
```

```console
$ relaxvm --help
```

````markdown
<!-- docs: skip -->
```python
shown, not run
```
````

- a list item:

  ```python
  w = 2
  ```
"""


def test_fences_find_every_block_with_lines() -> None:
    found = fences(PAGE)
    assert [(f.language, f.fence_line) for f in found] == [
        ("python", 3),
        ("python", 8),
        ("python", 14),
        ("pyhton", 18),
        ("py3", 22),
        ("Python", 26),
        ("text", 30),
        ("console", 34),
        ("markdown", 38),
        ("python", 47),
    ]
    # An indented fence inside a list item loses the indentation of its fence.
    assert found[-1].code == "w = 2\n"
    assert found[0].start_line == 4


def test_suspicious_languages_flags_python_typos_only() -> None:
    assert [f.language for f in suspicious_languages(PAGE)] == ["pyhton", "py3", "Python"]
    others = "```pytb\nTraceback\n```\n```toml\n```\n```python3\n```\n```pyhon\n```\n"
    assert [f.language for f in suspicious_languages(others)] == ["python3", "pyhon"]


def test_skip_markers_reasons_and_targets() -> None:
    markers = skip_markers(PAGE)
    assert [(m.line, m.reason) for m in markers] == [(7, "needs a GPU"), (12, None)]
    # A blank line between the marker and its fence is allowed.
    assert markers[1].fence is not None and markers[1].fence.fence_line == 14


def test_page_blocks_skip_and_shadow(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(PAGE, encoding="utf-8")
    blocks = page_blocks(tmp_path, "p.md")
    assert [(b.test_id, b.skip_reason) for b in blocks] == [
        ("p.md[0]", None),
        ("p.md[1]", "needs a GPU"),
        ("p.md[2]", "no reason given"),
        ("p.md[3]", None),
    ]
    shadow = shadow_source(PAGE, blocks).splitlines()
    # Code stays on its page line; skipped blocks are left out.
    assert shadow[3] == "x = 1"
    assert shadow[8] == ""
    assert shadow[47] == "w = 2"
    assert "line 4: 'x = 1'" in blocks[0].where


RUN_PAGE = """\
```python
from relaxvm.script import ir as I, relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        return R.add(x, x)
```

Later blocks see earlier names:

```pycon
>>> sorted(f.name_hint for f in Module.get_global_vars())
['main']
>>> len(Module.functions)
5
```

```python
raise ValueError("broken example")
```
"""


def test_page_run_shares_namespace_doctests_and_reports_page_lines(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(RUN_PAGE, encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = _PageRun("p.md", scratch, root=tmp_path)
    try:
        first, doctests, broken = run.blocks
        # A decorated class in a block: the script parser found its source through inspect.
        assert run.run(first) is None
        report = run.run(doctests)
        # The doctest's first example passed in the page namespace; the second one failed.
        assert report is not None and "Expected:\n    5\nGot:\n    1" in report
        assert "sorted(f.name_hint" not in report
        report = run.run(broken)
        assert report is not None and 'File "p.md", line 22' in report
        assert "ValueError: broken example" in report
        assert run.failed == {0: False, 1: True, 2: True}
        # What a page registers in the process-global tables goes away with the page.
        transform.register_pipeline("docs-test-only", lambda target=None: transform.Sequential([]))
        op_table.register_op(
            "docs.test_only", num_inputs=0, infer=lambda call, ctx: ctx.arg_sinfo(call, 0)
        )
    finally:
        run.close()
    assert run.module_name not in sys.modules
    assert "docs-test-only" not in transform.list_pipelines()
    assert "docs.test_only" not in op_table.list_ops()
    assert "relax.add" in op_table.list_ops()
