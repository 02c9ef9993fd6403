"""Smoke test of benchmarks/bench_cuda.py on the simulated device at tiny sizes, so that the
script cannot rot before a GPU runs it. It asserts the rows and the JSON, never a timing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("relaxvm_cuda.codegen")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cuda.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relaxvm_bench_cuda", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_simulated_run_checks_results_and_prints_every_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm_cuda import driver

    monkeypatch.setenv("RELAXVM_CUDA_SIMULATOR", "1")
    monkeypatch.setattr(driver, "_driver", None)
    out_json = tmp_path / "rows.json"
    bench = _load()
    argv = ["--simulate", "--workloads", "add,softmax", "--scale", "0.002", "--repeat", "1"]
    try:
        assert bench.main([*argv, "--json", str(out_json)]) == 0
    finally:
        driver.set_driver(None)
    text = capsys.readouterr().out
    assert "SIMULATED: timings mean nothing" in text
    assert "add " in text and "softmax " in text and ">= 0.8x torch" in text
    rows = json.loads(out_json.read_text())
    assert [r["workload"] for r in rows] == ["add", "softmax"]
    assert all(r["relaxvm_s"] > 0 and r["torch_s"] is None for r in rows)


def test_without_a_gpu_it_says_what_is_missing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm_cuda import driver

    monkeypatch.delenv("RELAXVM_CUDA_SIMULATOR", raising=False)
    monkeypatch.setenv("RELAXVM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
    driver.set_driver(None)
    try:
        assert _load().main(["--workloads", "add"]) == 2
    finally:
        driver.set_driver(None)
    assert "no GPU to measure on" in capsys.readouterr().out
