"""Smoke test of benchmarks/bench_cpu.py at tiny sizes, so that the script cannot rot.

It asserts the table's rows and the JSON's shape, never a timing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cpu.py"
TINY = ["--quick", "--workloads", "add,mlp1", "--repeat", "2", "--scale", "0.0625"]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relaxvm_bench_cpu", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load()


def test_quick_run_prints_every_row(bench, capsys, tmp_path):
    out_json = tmp_path / "results.json"
    assert bench.main([*TINY, "--interfere", "none,numpy", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("machine: ")
    assert "vector ISA (llvmlite host" in out
    for mode in ("none", "numpy"):
        assert f"== interference: {mode} ==" in out
    assert "== interference: process ==" not in out
    lines = out.splitlines()
    add_rows = [line for line in lines if line.startswith("add 256K ")]
    mlp_rows = [line for line in lines if line.startswith("MLP 32x3 b1 ")]
    assert len(add_rows) == 2 and len(mlp_rows) == 2  # one per mode
    assert all(" GB/s " in row for row in add_rows)
    assert all((" ok " in row) != (" LOSES" in row) for row in add_rows + mlp_rows)
    assert "target >= 1.8x numpy: " in out
    assert "target <= 0.6x numpy: " in out and "target <= 1x onnxruntime: " in out
    assert "torch" in out
    data = json.loads(out_json.read_text())
    assert {(r["mode"], r["workload"]) for r in data["results"]} == {
        (mode, key) for mode in ("none", "numpy") for key in ("add", "mlp1")
    }
    for result in data["results"]:
        assert {"relaxvm 1t", "numpy", "onnxruntime"} <= set(result["stats"])
        assert all(
            s["median_s"] > 0 and s["p90_s"] >= s["median_s"] for s in result["stats"].values()
        )
    assert data["machine"]["threads"] >= 1


def test_process_and_threads_modes(bench, capsys):
    argv = ["--quick", "--workloads", "add", "--repeat", "2", "--scale", "0.0625"]
    assert bench.main([*argv, "--interfere", "process,threads"]) == 0
    out = capsys.readouterr().out
    assert "== interference: process ==" in out and "== interference: threads ==" in out
    assert sum(line.startswith("add 256K ") for line in out.splitlines()) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workloads", "add,fft"], "unknown workload(s) ['fft']"),
        (["--interfere", "gpu"], "unknown interference mode(s) ['gpu']"),
        (["--repeat", "1"], "--repeat must be at least 2"),
    ],
)
def test_bad_arguments(bench, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        bench.parse_args(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_mismatch_raises(bench):
    class _Out:
        def numpy(self) -> np.ndarray:
            return np.ones(4, "float32")

    work = bench.Workload("w", "wrong", "ms", 0.0, lambda: lambda: _Out(), np.zeros(4, "float32"))
    with pytest.raises(SystemExit, match=r"wrong: relaxvm \(2 threads\) differs .*max error 1.0"):
        bench.check(work, 2)
    work.expected = np.zeros(5, "float32")
    with pytest.raises(SystemExit, match=r"shape \(4,\) vs \(5,\)"):
        bench.check(work, 1)
    work.expected = np.ones(4, "float32")
    bench.check(work, 1)  # equal: no error
