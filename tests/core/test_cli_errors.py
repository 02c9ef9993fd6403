"""The ``relaxvm`` process's error contract, through a subprocess: every mistake is one line
``relaxvm COMMAND: error: ...`` on stderr with exit status 1 (argparse's own included), except
a script diagnostic, which keeps its source and caret lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

MODEL = """\
from relaxvm.script import ir as I, relax as R


@I.ir_module
class Small:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 3), "float32"),
             scale: R.Prim("float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return (y, scale)
"""


def relaxvm(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-m", "relaxvm", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli_errors")
    (path / "small.py").write_text(MODEL, encoding="utf-8")
    assert relaxvm("compile", "small.py", "-o", "small.rvm", cwd=path).returncode == 0
    np.save(path / "x.npy", np.ones((2, 4), "float32"))
    np.savez(path / "w.npz", w=np.ones((4, 3), "float32"))
    np.savez(path / "bad.npz", w=np.ones((4, 3), "float32"), wq=np.ones(1))
    return path


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["run"], "relaxvm run: error: the following arguments are required: FILE"),
        (["bench", "small.py", "--number", "x"],
         "relaxvm bench: error: argument --number: invalid int value: 'x'"),
        (["run", "small.rvm", "--bogus"], "relaxvm run: error: unrecognized arguments: --bogus"),
        (["nosuch"], "relaxvm: error: argument COMMAND: invalid choice: 'nosuch' (choose from "
                     "'demo', 'plugins', 'inspect', 'run', 'compile', 'build', 'bench')"),
        (["run", "small.rvm", "x.npy", "--params", "bad.npz", "--arg", "scale=1"],
         "relaxvm run: error: --params bad.npz: 'wq' is not a parameter of main(x, w, scale); "
         "did you mean 'w'?"),
        (["run", "small.rvm", "x.npy", "--params", "w.npz"],
         "relaxvm run: error: no value for scale of main(x, w, scale): give them as .npy files, "
         "--inputs IN.npz, --params W.npz or --arg NAME=VALUE"),
        (["run", "small.rvm", "x.npy", "--params", "w.npz", "--arg", "scale=big"],
         "relaxvm run: error: --arg scale=big: parameter 'scale' is R.Prim(\"float32\"); "
         "expected a floating-point number, got 'big'"),
        (["run", "small.py"],
         "relaxvm run: error: small.py is a model source file, not an executable: compile it "
         "first (relaxvm compile small.py -o small.rvm)"),
        (["bench", "small.py", "--dim", "m=3"],
         "relaxvm bench: error: --dim m=3: 'm' is not a symbolic size of main; its symbolic "
         "sizes are n"),
        (["bench", "small.rvm", "--dim", "n=3"],
         "relaxvm bench: error: --dim sizes random inputs, which need the model file (its "
         "annotations); small.rvm is an executable"),
    ],
)  # fmt: skip
def test_mistakes_are_one_line_with_status_1(folder: Path, argv: list[str], line: str) -> None:
    result = relaxvm(*argv, cwd=folder)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


def test_run_and_bench_with_params_and_prim_arg(folder: Path) -> None:
    result = relaxvm(
        "run", "small.rvm", "--func", "main", "x.npy", "--params", "w.npz", "--arg", "scale=0.5",
        cwd=folder,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "output[0]: Tensor shape=(2, 3) dtype=float32 min=4 max=4" in result.stdout
    assert "output[1]: float 0.5" in result.stdout
    result = relaxvm(
        "bench", "small.py", "--params", "w.npz", "--dim", "n=5", "--number", "1",
        "--repeat", "1", "--profile", cwd=folder,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "main on given w and random x (5, 4), scale " in result.stdout
    assert "matmul" in result.stdout and "Total" in result.stdout  # the profile table


def test_script_error_keeps_its_caret_line(folder: Path) -> None:
    (folder / "bad.py").write_text(MODEL.replace("R.nn.relu(", "R.nn.relux("), encoding="utf-8")
    result = relaxvm("compile", "bad.py", cwd=folder)
    assert result.returncode == 1
    first, source, caret = result.stderr.splitlines()
    assert first.startswith("relaxvm compile: error: bad.py:10:")
    assert "unknown op or function 'R.nn.relux'" in first
    assert source.strip() == "y = R.nn.relu(R.matmul(x, w))".replace("relu", "relux")
    assert caret.strip().startswith("^") and source[caret.index("^") :].startswith("R.nn.relux")


def test_plugins_json(folder: Path) -> None:
    result = relaxvm("plugins", "--json", cwd=folder)
    assert result.returncode == 0, result.stderr
    plugins = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert plugins["llvm"]["targets"] == ["llvm"]
    assert {"op": "relax.matmul", "target": None} in plugins["ops"]["legalizations"]
    assert "vm.builtin.match_shape" in plugins["builtins"]["functions"]
