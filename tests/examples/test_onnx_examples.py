"""examples/onnx_import.py: each of its models imports, compiles and matches the reference."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from relaxvm.testing.onnx import require_onnx

require_onnx()

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "onnx_import.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relaxvm_example_onnx_import", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", ["tiny", "mlp", "cnn", "transformer"])
def test_onnx_import_example(model: str) -> None:
    assert _load().run(model, verbose=False) < 1e-4


def test_onnx_import_main_prints_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert _load().main(["--exec-mode", "compiled"]) == 0
    out = capsys.readouterr().out
    assert "tiny: 4 nodes" in out and "N=5: output (5, 4)" in out
    assert out.strip().endswith("PASS")
