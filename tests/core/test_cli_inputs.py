"""``relaxvm run`` / ``relaxvm bench`` inputs, in process: the shared argument grammar, binding
by parameter name (``--params``, ``--inputs``, ``--arg``), scalar parsing, ``--dim`` checks,
parameter kinds read from an executable, ``--profile``, and ``plugins --json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.cli import commands as cli
from relaxvm.cli.common import CLIError
from relaxvm.cli.inputs import (
    ParamSpec,
    bind_inputs,
    params_from_executable,
    parse_scalar,
    to_vm_value,
)
from relaxvm.cli.random_inputs import parse_dims
from relaxvm.runtime import Shape

PRIM_MODEL = """\
from relaxvm.script import ir as I, relax as R


@I.ir_module
class Mod:
    @R.function
    def main(
        x: R.Tensor(("n", 4), "float32"),
        use_relu: R.Prim("bool"),
        k: R.Prim("int64"),
        s: R.Shape(["m"]),
        t: R.Tuple(R.Tensor((2,), "int32"), R.Prim("float32")),
    ):
        y = R.nn.relu(x)
        return (y, use_relu, k, s, t)

    @R.function
    def flags(x: R.Tensor((2, 4), "float32"), use_relu: R.Prim("bool"), k: R.Prim("int64"),
              s: R.Shape(["m"])):
        return (R.nn.relu(x), use_relu, k, s)
"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line_error(status: int, err: str) -> str:
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def prim_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("prim")
    model = folder / "prim.py"
    model.write_text(PRIM_MODEL, encoding="utf-8")
    assert cli.main(["compile", str(model), "-o", str(folder / "prim.rvm")]) == 0
    return model, folder / "prim.rvm"


def options(**given: object) -> argparse.Namespace:
    values: dict[str, object] = {"inputs": [], "npz": None, "params": [], "arg": []}
    values.update(given)
    return argparse.Namespace(**values)


SPECS = [
    ParamSpec("x", "tensor", "float32"),
    ParamSpec("flag", "prim", "bool"),
    ParamSpec("k", "prim", "int8"),
    ParamSpec("s", "shape"),
]


# -- the grammar -------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["run", "bench"])
def test_run_and_bench_share_one_grammar(command: str) -> None:
    parser, subparsers = cli._build_parser()
    before = cli._parse(parser, subparsers, [command, "m.rvm", "--func", "f", "a.npy", "b.npy"])
    after = cli._parse(parser, subparsers, [command, "m.rvm", "a.npy", "b.npy", "--func", "f"])
    for parsed in (before, after):
        assert (parsed.file, parsed.inputs, parsed.func) == ("m.rvm", ["a.npy", "b.npy"], "f")
    full = cli._parse(
        parser, subparsers,
        [command, "m.rvm", "--params", "w.npz", "--arg", "k=5", "--params", "v.npz", "x.npy"],
    )  # fmt: skip
    assert (full.params, full.arg, full.inputs) == (["w.npz", "v.npz"], ["k=5"], ["x.npy"])


def test_usage_errors_are_cli_errors_naming_the_command() -> None:
    parser, subparsers = cli._build_parser()
    with pytest.raises(cli.UsageError, match="unrecognized arguments: --bogus") as info:
        cli._parse(parser, subparsers, ["bench", "m.py", "--bogus"])
    assert info.value.prog == "relaxvm bench"
    with pytest.raises(cli.UsageError, match="argument --number: invalid int value: 'x'"):
        cli._parse(parser, subparsers, ["bench", "m.py", "--number", "x"])


# -- scalars -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "spec", "value"),
    [
        ("true", SPECS[1], True),
        ("FALSE", SPECS[1], False),
        ("1", SPECS[1], True),
        ("0", SPECS[1], False),
        ("-128", SPECS[2], -128),
        ("2.5", ParamSpec("f", "prim", "float32"), 2.5),
        ("7", ParamSpec("u", "object"), 7),
        ("true", ParamSpec("u", "object"), True),
        ("0.5", ParamSpec("u", "object"), 0.5),
    ],
)
def test_parse_scalar_by_dtype(text: str, spec: ParamSpec, value: object) -> None:
    got = parse_scalar(text, spec, "--arg")
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "spec", "message"),
    [
        ("maybe", SPECS[1], "parameter 'flag' is R.Prim(\"bool\"); expected true, false, 1 or 0"),
        ("2", SPECS[1], "expected true, false, 1 or 0, got '2'"),
        ("1.5", SPECS[2], "parameter 'k' is R.Prim(\"int8\"); expected an integer, got '1.5'"),
        ("200", SPECS[2], "200 is out of range [-128, 127]"),
        ("abc", ParamSpec("f", "prim", "float64"), "expected a floating-point number"),
        ("3", SPECS[3], "parameter 's' is R.Shape, which takes no scalar"),
    ],
)
def test_parse_scalar_errors_name_the_parameter(text: str, spec: ParamSpec, message: str) -> None:
    with pytest.raises(CLIError, match="^--arg: ") as info:
        parse_scalar(text, spec, "--arg")
    assert message in str(info.value)


# -- binding -----------------------------------------------------------------------------------
def test_bind_by_name_from_params_inputs_and_args(tmp_path: Path) -> None:
    x = np.ones((2, 4), "float32")
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "s.npz", s=np.array([3, 4]))
    bound = bind_inputs(
        options(inputs=[str(tmp_path / "x.npy")], params=[str(tmp_path / "s.npz")],
                arg=["k=-3", "flag=true"]),
        SPECS, "main",
    )  # fmt: skip
    assert list(bound) == ["x", "flag", "k", "s"]  # parameter order
    np.testing.assert_array_equal(bound["x"], x)
    assert (bound["flag"], bound["k"]) == (True, -3)
    assert to_vm_value(SPECS[3], bound["s"]) == Shape([3, 4])
    arg_file = bind_inputs(options(arg=[f"x={tmp_path / 'x.npy'}"]), SPECS, "main")
    np.testing.assert_array_equal(arg_file["x"], x)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"params": ["{w}"]},
            "--params {w}: 'bogus', 'kk' are not parameters of main(x, flag, k, s)",
        ),
        (
            {"arg": ["flga=1"]},
            "--arg flga=1: 'flga' is not a parameter of main(x, flag, k, s); did you mean 'flag'?",
        ),
        ({"arg": ["nope=1"]}, "--arg nope=1: 'nope' is not a parameter of main(x, flag, k, s)"),
        ({"arg": ["k"]}, "--arg 'k': expected NAME=VALUE, e.g. --arg use_relu=true"),
        (
            {"arg": ["k=1", "k=2"]},
            "parameter 'k' of main is given twice: --arg k=1 and --arg k=2",
        ),
        ({"arg": ["x=missing.npy"]}, "--arg x=missing.npy: no such file: missing.npy"),
    ],
)
def test_bind_errors(tmp_path: Path, given: dict[str, list[str]], message: str) -> None:
    w = str(tmp_path / "w.npz")
    np.savez(w, bogus=np.zeros(1), kk=np.zeros(1), x=np.zeros(1))
    given = {key: [v.replace("{w}", w) for v in values] for key, values in given.items()}
    with pytest.raises(CLIError) as info:
        bind_inputs(options(**given), SPECS, "main")
    assert str(info.value) == message.replace("{w}", w)


def test_to_vm_value_checks_the_kind() -> None:
    assert to_vm_value(SPECS[2], np.array(5)) == 5
    assert to_vm_value(SPECS[1], np.array(True)) is True
    with pytest.raises(CLIError, match="'k' is R.Prim\\(\"int8\"\\): expected a scalar"):
        to_vm_value(SPECS[2], np.zeros(3))
    with pytest.raises(CLIError, match="'s' is R.Shape: expected a 1-d integer array"):
        to_vm_value(SPECS[3], np.zeros(2, "float32"))
    zero_d = to_vm_value(SPECS[0], 1.5)  # a scalar for a tensor: 0-d of its dtype
    assert zero_d.shape == () and str(zero_d.dtype) == "float32"


def test_params_from_executable_reads_the_parameter_checks(prim_files: tuple[Path, Path]) -> None:
    specs = params_from_executable(relaxvm.load_module(prim_files[1]), "main")
    assert [(s.name, s.kind, s.dtype) for s in specs] == [
        ("x", "tensor", "float32"),
        ("use_relu", "prim", "bool"),
        ("k", "prim", "int64"),
        ("s", "shape", None),
        ("t", "tuple", None),
    ]


def test_parse_dims_checks_names() -> None:
    assert parse_dims(["n=8", "m=0"], ["n", "m"], "main") == {"n": 8, "m": 0}
    with pytest.raises(CLIError) as info:
        parse_dims(["q=1"], ["n", "m"], "main")
    assert (
        str(info.value)
        == "--dim q=1: 'q' is not a symbolic size of main; its symbolic sizes are n, m"
    )
    with pytest.raises(CLIError, match="it has no symbolic sizes"):
        parse_dims(["n=1"], [], "main")
    with pytest.raises(CLIError, match="a size must be >= 0"):
        parse_dims(["n=-1"], ["n"], "main")


# -- run and bench in process ------------------------------------------------------------------
def test_run_with_prim_args_and_shape_from_file(
    capsys: pytest.CaptureFixture[str], prim_files: tuple[Path, Path], tmp_path: Path
) -> None:
    np.savez(tmp_path / "p.npz", x=-np.ones((2, 4), "float32"), s=np.array([5]))
    status, out, err = run_cli(
        capsys, "run", str(prim_files[1]), "--params", str(tmp_path / "p.npz"),
        "--arg", "use_relu=true", "--func", "flags", "--arg", "k=5",
    )  # fmt: skip
    assert status == 0, err
    assert "flags(x, use_relu, k, s) returned:" in out
    assert "output[0]: Tensor shape=(2, 4) dtype=float32 min=0 max=0" in out
    assert "output[1]: bool True" in out and "output[2]: int 5" in out
    assert "output[3]: Shape(5,)" in out
    status, _, err = run_cli(capsys, "run", str(prim_files[1]), "--func", "flags",
                             "--params", str(tmp_path / "p.npz"), "--arg", "k=5")  # fmt: skip
    assert one_line_error(status, err) == (
        "relaxvm run: error: no value for use_relu of flags(x, use_relu, k, s): give them as "
        ".npy files, --inputs IN.npz, --params W.npz or --arg NAME=VALUE"
    )


def test_bench_invents_every_kind(
    capsys: pytest.CaptureFixture[str], prim_files: tuple[Path, Path]
) -> None:
    status, out, err = run_cli(
        capsys, "bench", str(prim_files[0]), "--dim", "n=3", "--dim", "m=2",
        "--arg", "k=7", "--number", "1", "--repeat", "1",
    )  # fmt: skip
    assert status == 0, err
    assert "main on given k and random x (3, 4), use_relu " in out
    assert ", s Shape(2,), t ((2,), " in out


def test_bench_unknown_dim_fails_before_compiling(
    capsys: pytest.CaptureFixture[str], prim_files: tuple[Path, Path]
) -> None:
    status, out, err = run_cli(capsys, "bench", str(prim_files[0]), "--dim", "N=3")
    assert out == ""  # nothing compiled
    assert one_line_error(status, err) == (
        "relaxvm bench: error: --dim N=3: 'N' is not a symbolic size of main; its symbolic "
        "sizes are n, m"
    )


def test_bench_profile_prints_the_table(
    capsys: pytest.CaptureFixture[str], prim_files: tuple[Path, Path]
) -> None:
    argv = ["bench", str(prim_files[0]), "--dim", "n=3", "--dim", "m=2", "--number", "1",
            "--repeat", "1", "--profile"]  # fmt: skip
    status, out, err = run_cli(capsys, *argv)
    assert status == 0, err
    assert "vm.builtin.check_prim_value_info" in out and "relu" in out


def test_bench_profile_unavailable_is_one_line(
    capsys: pytest.CaptureFixture[str],
    prim_files: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(relaxvm.VirtualMachine, "profile", raising=False)
    argv = ["bench", str(prim_files[0]), "--dim", "n=3", "--dim", "m=2", "--number", "1",
            "--repeat", "1", "--profile"]  # fmt: skip
    status, _, err = run_cli(capsys, *argv)
    assert one_line_error(status, err) == (
        "relaxvm bench: error: --profile: profiling is not available (no VirtualMachine.profile)"
    )


# -- plugins -----------------------------------------------------------------------------------
def test_plugins_lists_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "plugins")
    assert status == 0
    blocks = {b.splitlines()[0]: b.splitlines()[1:] for b in out.split("\n\n")[1:]}
    assert blocks["llvm (loaded):"] == ["  targets (1): llvm"]
    ops = " ".join(blocks["ops (loaded):"])
    assert "legalizations (" in ops and "relax.add," in ops
    status, out, _ = run_cli(capsys, "plugins", "--json")
    assert status == 0
    document = json.loads(out)
    plugins = {p["name"]: p for p in document["plugins"]}
    assert plugins["llvm"]["targets"] == ["llvm"] and plugins["llvm"]["status"] == "loaded"
    assert {"op": "relax.add", "target": None} in plugins["ops"]["legalizations"]
    assert "vm.builtin.copy" in plugins["builtins"]["functions"]
    assert set(plugins["builtins"]) == {
        "name", "status", "module", "distribution", "error", "functions", "legalizations",
        "targets",
    }  # fmt: skip
    status, _, err = run_cli(capsys, "plugins", "--json", "-v")
    assert one_line_error(status, err) == (
        "relaxvm plugins: error: --json prints everything it knows; it takes neither -v nor "
        "--functions"
    )
