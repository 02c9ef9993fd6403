"""``relaxvm compile`` and ``relaxvm bench``: model files in, executables and timings out, and
their errors as one line on stderr."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.cli import commands as cli

MODEL = """\
import numpy as np
from relaxvm.script import ir as I, relax as R

WEIGHTS = np.ones((4, 3), "float32")  # model files are Python: helper code is fine


@I.ir_module
class Model:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 3), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y
"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status: int, err: str, pattern: str) -> None:
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert pattern in lines[0], lines[0]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    return path


def test_compile_writes_a_runnable_executable(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "out.rvm"
    status, out, err = run_cli(
        capsys, "compile", str(model), "-o", str(out_path), "--time-passes", "--text"
    )
    assert status == 0, err
    assert f"compiling Model from {model} for llvm" in out
    assert f"wrote {out_path}" in out
    assert "LegalizeOps" in out and "VMShapeLower" in out  # the pass timing table
    assert "@main:" in out  # --text
    vm = relaxvm.VirtualMachine(relaxvm.load_module(out_path), relaxvm.cpu())
    x = np.array([[1, -2, 3, 0], [0, 0, 0, -1]], "float32")
    w = np.ones((4, 3), "float32")
    got = vm["main"](relaxvm.tensor(x), relaxvm.tensor(w)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w, 0))


def test_compile_default_output_and_compiled_mode(capsys, model: Path) -> None:
    status, _, err = run_cli(capsys, "compile", str(model), "--exec-mode", "compiled")
    assert status == 0, err
    written = model.with_suffix(".rvm")
    assert written.exists()
    assert relaxvm.load_module(written).exec_mode == "compiled"


def test_compiled_file_runs_from_the_cli(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "m.rvm"
    assert run_cli(capsys, "compile", str(model), "-o", str(out_path))[0] == 0
    np.savez(tmp_path / "in.npz", x=np.ones((2, 4), "float32"), w=np.ones((4, 3), "float32"))
    status, out, err = run_cli(capsys, "run", str(out_path), "--inputs", str(tmp_path / "in.npz"))
    assert status == 0, err
    assert "Tensor shape=(2, 3) dtype=float32 min=4 max=4" in out


def test_bench_model_with_random_inputs(capsys, model: Path) -> None:
    status, out, err = run_cli(
        capsys, "bench", str(model), "--dim", "n=8", "--number", "2", "--repeat", "2"
    )
    assert status == 0, err
    assert "main on random inputs (8, 4), (4, 3): mean" in out
    assert "(2 x 2 calls)" in out


def test_bench_executable_with_inputs(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "m.rvm"
    assert run_cli(capsys, "compile", str(model), "-o", str(out_path))[0] == 0
    np.save(tmp_path / "x.npy", np.ones((3, 4), "float32"))
    np.save(tmp_path / "w.npy", np.ones((4, 3), "float32"))
    status, out, err = run_cli(
        capsys, "bench", str(out_path), str(tmp_path / "x.npy"), str(tmp_path / "w.npy"),
        "--number", "1", "--repeat", "1",
    )  # fmt: skip
    assert status == 0, err
    assert "main on given inputs: mean" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compile", "missing.py"], "no such model file: missing.py"),
        (["bench", "{model}"], "give --dim n=SIZE"),
        (["bench", "{model}", "--dim", "n"], "--dim 'n': expected NAME=SIZE"),
        (["bench", "{model}", "--dim", "n=8", "--func", "nope"], "has no function 'nope'"),
        (["bench", "{model}", "--number", "0"], "--number and --repeat must be >= 1"),
        (["compile", "{model}", "--module", "Other"], "defines no IRModule named 'Other'"),
        (["compile", "{model}", "--target", "nosuch"], "unknown target kind 'nosuch'"),
    ],
)
def test_errors_are_one_line(capsys, model: Path, argv: list[str], message: str) -> None:
    status, _, err = run_cli(capsys, *[a.replace("{model}", str(model)) for a in argv])
    assert_one_line_error(status, err, message)


def test_model_file_problems(capsys, tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "compile", str(empty))
    assert_one_line_error(status, err, "must define exactly one IRModule")
    broken = tmp_path / "broken.py"
    broken.write_text("raise KeyError('oops')\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "compile", str(broken))
    assert_one_line_error(status, err, "failed to run: KeyError: 'oops'")
    bad_script = tmp_path / "bad_script.py"
    bad_script.write_text(MODEL.replace("R.nn.relu(", "R.nn.relux("), encoding="utf-8")
    status, _, err = run_cli(capsys, "compile", str(bad_script))
    assert status == 1 and "relux" in err and "Traceback" not in err
    two = tmp_path / "two.py"
    two.write_text(MODEL + "\nOther = Model\n", encoding="utf-8")
    status, _, err = run_cli(capsys, "compile", str(two))
    assert_one_line_error(status, err, "it defines Model, Other")
    assert run_cli(capsys, "compile", str(two), "--module", "Other")[0] == 0


def test_bench_executable_needs_inputs(capsys, model: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "m.rvm"
    assert run_cli(capsys, "compile", str(model), "-o", str(out_path))[0] == 0
    status, _, err = run_cli(capsys, "bench", str(out_path))
    assert_one_line_error(status, err, "an executable file needs its inputs")
