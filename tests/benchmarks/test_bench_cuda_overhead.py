"""Smoke test of benchmarks/bench_cuda_overhead.py at a tiny size: it asserts the driver calls
a steady-state call makes (one launch per fused layer, the sample's one synchronization, no
allocation or copy), never a timing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("relaxvm_cuda.codegen")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cuda_overhead.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relaxvm_bench_cuda_overhead", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_counts_driver_calls_per_call_and_restores_the_driver(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from relaxvm_cuda import driver

    before = driver.set_driver(None)
    driver.set_driver(before)
    out_json = tmp_path / "rows.json"
    argv = ["--width", "16", "--batch", "2", "--number", "3", "--repeat", "2"]
    assert _load().main([*argv, "--json", str(out_json)]) == 0
    assert driver.set_driver(before) is before  # the no-op driver was uninstalled
    text = capsys.readouterr().out
    assert "no-op CUDA driver" in text and "bytecode" in text and "compiled" in text
    rows = json.loads(out_json.read_text())
    assert [r["exec_mode"] for r in rows] == ["bytecode", "compiled"]
    for row in rows:
        assert row["us_per_call"] > 0
        assert row["launch"] == 3.0 and row["sync"] == 1.0
        assert row["alloc"] == row["free"] == row["memcpy"] == row["memset"] == 0.0
