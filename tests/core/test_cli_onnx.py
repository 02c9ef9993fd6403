"""``relaxvm compile model.onnx`` and ``relaxvm bench model.onnx``: ONNX files in, executables
and timings out, ``--shape`` overrides, and the importer's errors as the CLI's one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.cli import commands as cli
from relaxvm.cli.common import CLIError
from relaxvm.cli.onnx_load import parse_shapes
from relaxvm.testing.onnx import make_model, require_onnx

onnx = require_onnx()
from onnx import helper  # noqa: E402

W = np.arange(12, dtype="float32").reshape(4, 3) / 10 - 0.5
B = np.array([0.5, -0.25, 1.0], "float32")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status: int, err: str, *patterns: str) -> str:
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for pattern in patterns:
        assert pattern in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """``x @ W + B`` with a symbolic batch ``N``, saved as model.onnx."""
    proto = make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["y"]),
        ],
        inputs={"x": ("float32", ["N", 4])},
        outputs={"y": ("float32", ["N", 3])},
        initializers={"w": W, "b": B},
    )
    path = tmp_path / "model.onnx"
    onnx.save(proto, str(path))
    return path


def run_executable(path: Path, x: np.ndarray) -> np.ndarray:
    vm = relaxvm.VirtualMachine(relaxvm.load_module(path), relaxvm.cpu())
    return vm["main"](relaxvm.tensor(x)).numpy()


def test_compile_onnx_writes_a_runnable_executable(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "out.rvm"
    status, out, err = run_cli(capsys, "compile", str(model), "-o", str(out_path))
    assert status == 0, err
    assert f"compiling model.onnx from {model} for llvm" in out
    assert f"wrote {out_path}" in out
    for batch in (1, 3):  # the model's symbolic batch survives into the executable
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype("float32")
        np.testing.assert_allclose(run_executable(out_path, x), x @ W + B, rtol=1e-5, atol=1e-6)


def test_compile_onnx_default_output(capsys, model: Path) -> None:
    status, _, err = run_cli(capsys, "compile", str(model), "--exec-mode", "compiled")
    assert status == 0, err
    written = model.with_suffix(".rvm")
    assert written.exists()
    assert relaxvm.load_module(written).exec_mode == "compiled"


def test_compile_onnx_with_a_static_shape(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "static.rvm"
    status, _, err = run_cli(capsys, "compile", str(model), "-o", str(out_path), "--shape", "x=2,4")
    assert status == 0, err
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(run_executable(out_path, x), x @ W + B, rtol=1e-6)
    with pytest.raises(relaxvm.errors.RelaxVMError):
        run_executable(out_path, np.ones((3, 4), "float32"))  # batch 2 was compiled in


def test_compile_onnx_with_a_renamed_symbolic_dim(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "sym.rvm"
    argv = ["compile", str(model), "-o", str(out_path), "--shape", "x=batch,4", "--print-ir"]
    status, out, err = run_cli(capsys, *argv)
    assert status == 0, err
    assert '"batch"' in out and '"N"' not in out  # --print-ir shows the renamed dim
    x = np.ones((5, 4), "float32")
    np.testing.assert_allclose(run_executable(out_path, x), x @ W + B, rtol=1e-6)


def test_bench_onnx_with_random_inputs(capsys, model: Path) -> None:
    status, out, err = run_cli(
        capsys, "bench", str(model), "--dim", "N=8", "--number", "2", "--repeat", "2"
    )
    assert status == 0, err
    assert "compiled for llvm" in out
    assert "main on random inputs (8, 4)" in out  # --dim sized the symbolic batch


def test_bench_onnx_static_shape(capsys, model: Path) -> None:
    status, out, err = run_cli(
        capsys, "bench", str(model), "--shape", "x=3,4", "--number", "1", "--repeat", "1"
    )
    assert status == 0, err
    assert "main on random inputs (3, 4)" in out


def unsupported_model(path: Path) -> Path:
    graph = helper.make_graph(
        [
            helper.make_node("Frobnicate", ["x"], ["a"], name="first", domain="com.example"),
            helper.make_node("Twiddle", ["a"], ["y"], name="second", domain="com.example"),
        ],
        "unsupported",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    )
    onnx.save(proto, str(path))
    return path


def test_unsupported_operators_in_one_line(capsys, tmp_path: Path) -> None:
    path = unsupported_model(tmp_path / "odd.onnx")
    status, _, err = run_cli(capsys, "compile", str(path))
    line = assert_one_line_error(
        status,
        err,
        "relaxvm compile: error: cannot import",
        "2 node(s) of the model are not supported: Frobnicate node 'first' (domain "
        "'com.example', opset 1): operator not supported; Twiddle node 'second'",
    )
    assert not (tmp_path / "odd.rvm").exists()
    assert "from_onnx" not in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shape", "x"], "--shape x: expected NAME=DIMS"),
        (["--shape", "x=2,four!"], "dim 'four!' must be a size (0 or more), a name or ?"),
        (["--shape", "x=2,-1"], "dim '-1' must be a size"),
        (["--shape", "x=2,4", "--shape", "x=3,4"], "the shape of 'x' is given twice"),
        (["--shape", "z=2,4"], "shape_dict names 'z', which is not an input of the graph"),
        (["--module", "M"], "--module picks one IRModule of a Python model file"),
    ],
)
def test_option_errors(capsys, model: Path, argv: list[str], message: str) -> None:
    status, _, err = run_cli(capsys, "compile", str(model), *argv)
    assert_one_line_error(status, err, "relaxvm compile: error:", message)


def test_file_errors(capsys, tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    status, _, err = run_cli(capsys, "compile", str(missing))
    assert_one_line_error(status, err, f"no such model file: {missing}")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\xfe not a protobuf")
    status, _, err = run_cli(capsys, "compile", str(garbage))
    assert_one_line_error(status, err, f"cannot import {garbage}:", "is not an ONNX model")
    status, _, err = run_cli(capsys, "bench", str(garbage))
    assert_one_line_error(status, err, "relaxvm bench: error: cannot import")


def test_shape_is_for_onnx_only(capsys, tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text("x = 1\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "compile", str(script), "--shape", "x=1")
    assert_one_line_error(status, err, "--shape applies to ONNX models")


def test_missing_onnx_is_one_line(capsys, monkeypatch: pytest.MonkeyPatch, model: Path) -> None:
    for name in [m for m in sys.modules if m == "onnx" or m.startswith("onnx.")]:
        monkeypatch.setitem(sys.modules, name, None)
    status, _, err = run_cli(capsys, "compile", str(model))
    assert_one_line_error(status, err, "relaxvm compile: error:", 'pip install "relaxvm[onnx]"')


@pytest.mark.parametrize(
    ("specs", "shapes"),
    [
        (["x=1,3,224,224"], {"x": [1, 3, 224, 224]}),
        (["x=N,3,?,?", "m=N"], {"x": ["N", 3, None, None], "m": ["N"]}),
        (["scalar="], {"scalar": []}),
        (["a=b=2"], {"a=b": [2]}),  # the last "=" splits: ONNX names may contain "="
    ],
)
def test_parse_shapes(specs: list[str], shapes: dict[str, Any]) -> None:
    assert parse_shapes(specs) == shapes


def test_parse_shapes_refuses_an_empty_name() -> None:
    with pytest.raises(CLIError, match="expected NAME=DIMS"):
        parse_shapes(["=1,2"])


def test_the_relaxvm_process(model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "proc.rvm"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-m", "relaxvm", "compile", str(model), "-o", str(out_path)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out_path.exists()
    x = np.full((2, 4), 0.5, "float32")
    np.testing.assert_allclose(run_executable(out_path, x), x @ W + B, rtol=1e-6)
