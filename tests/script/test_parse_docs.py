"""The examples of docs/script.md run as written (from a file, so the decorators can read
their source), and the error messages quoted there are the ones the parser produces."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from relaxvm.script import ScriptError, from_source

PAGE = Path(__file__).resolve().parents[2] / "docs" / "script.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_page_has_examples() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, tmp_path: Path) -> None:
    path = tmp_path / f"script_doc_{index}.py"
    path.write_text(BLOCKS[index], encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"script_doc_{index}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def test_quoted_error_messages_match() -> None:
    text = 'from relaxvm.script import relax as R\n\n\n\n@R.function\ndef f(x: R.Tensor((3, 4), "float32")):\n    return R.addd(x, x)\n'
    with pytest.raises(ScriptError) as info:
        from_source(text, source_name="model.py")
    message = str(info.value)
    assert "error: unknown op or function 'R.addd'; did you mean R.add?" in message
    assert message.splitlines()[0] in PAGE.read_text(encoding="utf-8")
