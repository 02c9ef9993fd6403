"""Smoke test of benchmarks/bench_ops.py at tiny sizes, so that the script cannot rot.

It asserts the table's rows and the output checks, never a timing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ops.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relaxvm_bench_ops", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_issue_rows_run_and_check_their_outputs(bench, capsys):
    args = ["--scale", "0.01", "--repeat", "1", "--number", "1"]
    assert bench.main([*args, "--only", "sort,topk,take,conv1d,group_norm"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "x numpy:" in line]
    names = ("sort rows", "topk k=16", "take rows", "conv1d", "group_norm")
    assert [row.split("  ")[0].split(" ")[0] for row in rows] == [n.split(" ")[0] for n in names]
    assert all(row.endswith((": ok", ": SLOWER")) for row in rows)
    assert "WRONG OUTPUT" not in out


def test_a_wrong_output_is_reported_and_fails_the_run(bench, capsys, monkeypatch):
    real = bench.cases

    def broken() -> list:
        case = next(c for c in real() if c.name.startswith("tril"))
        case.reference = lambda x: x  # not what tril computes
        return [case]

    monkeypatch.setattr(bench, "cases", broken)
    assert bench.main(["--scale", "0.01", "--repeat", "1", "--number", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("tril 2048x2048") and "WRONG OUTPUT" in line for line in lines)
