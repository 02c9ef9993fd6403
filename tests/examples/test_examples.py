"""Every example in examples/ compiles for the LLVM target and matches numpy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"relaxvm_example_{name}", EXAMPLES / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the script parser reads the source through inspect
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_mlp_dynamic_batch(exec_mode):
    assert _load("mlp").run([1, 5], exec_mode=exec_mode, verbose=False) < 1e-3


def test_cnn():
    assert _load("cnn").run(verbose=False) < 1e-3


def test_transformer_block():
    assert _load("transformer_block").run([3, 8], verbose=False) < 1e-3


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_control_flow(exec_mode):
    assert _load("control_flow").run(exec_mode=exec_mode, verbose=False)


def test_dynamic_batch():
    assert _load("dynamic_batch").run([1, 4], verbose=False)


def test_main_prints_pass(capsys):
    assert _load("control_flow").main([]) == 0
    assert capsys.readouterr().out.strip().endswith("PASS")
