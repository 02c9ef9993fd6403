"""The ``relaxvm`` command line: demo, plugins, inspect and run, and its error contract
(one line on stderr, exit status 1, never a traceback)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.cli import commands as cli
from relaxvm.cli import demo, demo_bytecode
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status: int, err: str, pattern: str) -> None:
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert pattern in lines[0], lines[0]


@pytest.fixture
def demo_file(tmp_path: Path) -> Path:
    demo_bytecode.register_kernels()
    path = tmp_path / "demo.rvm"
    demo_bytecode.build_executable().save(path)
    return path


@pytest.fixture
def tuple_file(tmp_path: Path) -> Path:
    """main(x, y) = (x, (shape_of(y), y)): only builtins, nested tuple output."""
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=2, param_names=["x", "y"]):
        ib.emit_call("vm.builtin.shape_of", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(2), ib.r(1)], dst=ib.r(3))
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(0), ib.r(3)], dst=ib.r(4))
        ib.emit_ret(ib.r(4))
    path = tmp_path / "tuple.rvm"
    ib.get().save(path)
    return path


# -- demo --------------------------------------------------------------------------------------
def test_demo_passes_and_prints_the_program(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "demo")
    assert status == 0
    assert out.rstrip().endswith("PASS")
    assert "class MyModule:" in out and "@main:" in out and "call  add" in out
    assert "[seed] main(x) matches numpy x + x" in out
    for mode in ("bytecode", "compiled"):
        assert f"[mlp/{mode}] n=1: out (1, 10) matches numpy" in out
        assert f"[mlp/{mode}] n=16: out (16, 10) matches numpy" in out
        assert f"[mlp/{mode}] bad input x: (2, 63) refused: VMError" in out
        assert "param=x" in out


def test_demo_reports_fail_and_exits_1_on_mismatch(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "reference_mlp", lambda x, p: np.zeros((x.shape[0], 10), "float32"))
    status, out, _ = run_cli(capsys, "demo", "--no-text")
    assert status == 1
    assert out.rstrip().endswith("FAIL")
    assert "DOES NOT match numpy" in out
    assert "@main:" not in out


def test_demo_save_keeps_a_loadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "kept.rvm"
    status, out, _ = run_cli(capsys, "demo", "--no-text", "--save", str(path))
    assert status == 0
    assert f"exported to {path}" in out
    loaded = relaxvm.load_module(path)
    x = np.ones((3, 64), "float32")
    params = [np.full(s, 0.01, "float32") for s in [(64, 128), (128,), (128, 10), (10,)]]
    got = relaxvm.VirtualMachine(loaded, relaxvm.cpu())["main"](*map(relaxvm.tensor, [x, *params]))
    np.testing.assert_allclose(got.numpy(), demo.reference_mlp(x, params), rtol=1e-5)


# -- plugins -----------------------------------------------------------------------------------
def test_plugins_lists_status_module_distribution_and_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocked = FakeEntryPoint("zz_blocked", value="nowhere.plugin")
    with isolated_plugins(
        [*installed_entry_points(), blocked], env={"RELAXVM_DISABLE_PLUGINS": "zz_blocked"}
    ):
        expected = len(
            next(
                p for p in relaxvm.registry.loader.plugin_report() if p.name == "builtins"
            ).registered
        )
        status, out, _ = run_cli(capsys, "plugins")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "RELAXVM_DISABLE_PLUGINS=zz_blocked"
    assert lines[1].split() == ["NAME", "STATUS", "REGISTERED", "MODULE", "DISTRIBUTION"]
    table = lines[2 : lines.index("")]  # the per-plugin lists follow a blank line
    rows = {line.split()[0]: line.split() for line in table}
    assert rows["builtins"] == [
        "builtins", "loaded", str(expected), "relaxvm_builtins.plugin", "relaxvm"
    ]  # fmt: skip
    assert rows["zz_blocked"][:4] == ["zz_blocked", "blocked", "-", "nowhere.plugin"]


def test_plugins_functions_lists_each_function_with_its_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with isolated_plugins():
        relaxvm.register_func("cli_test.user_func", lambda: None)
        status, out, _ = run_cli(capsys, "plugins", "--functions")
    assert status == 0
    sources = {}
    for line in out.split("\n\n")[-1].splitlines()[1:]:  # the last block: every function
        name, source = line.split(None, 1)
        sources[name] = source
    assert sources["device_api.cpu"] == "plugin 'builtins'"
    assert sources["cli_test.user_func"].startswith("user code (")


def test_plugins_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with isolated_plugins(load=False, env={"RELAXVM_DISABLE_PLUGINS": "builtins"}):
        status, _, err = run_cli(capsys, "plugins")
    assert_one_line_error(status, err, "essential relaxvm plugin 'builtins'")


def _builtins_entry_point() -> list[object]:
    return [ep for ep in installed_entry_points() if ep.name == "builtins"]


class _RaisingPlugin:
    @relaxvm.hookimpl
    def relaxvm_register_builtins(self, registry: object) -> None:
        raise KeyError("oops")


def test_plugins_shows_broken_plugins_with_their_reason_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry_points = [
        *_builtins_entry_point(),
        FakeEntryPoint("broken", error=ImportError("no module named nothere"), value="bad.mod"),
        FakeEntryPoint("raises", _RaisingPlugin(), value="raises.plugin"),
    ]
    with isolated_plugins(entry_points, load=False, env={"RELAXVM_DISABLE_PLUGINS": None}):
        count = len(relaxvm.registry.loader.plugin_report())  # nothing loaded yet
        status, out, err = run_cli(capsys, "plugins")
        builtins_count = len(
            next(
                p for p in relaxvm.registry.loader.plugin_report() if p.name == "builtins"
            ).registered
        )
    assert count == 0 and builtins_count > 0
    assert out.splitlines() == [
        "NAME      STATUS  REGISTERED  MODULE                   DISTRIBUTION",
        f"builtins  ok      {builtins_count:<10}  relaxvm_builtins.plugin  relaxvm",
        "broken    failed  -           bad.mod                  ?",
        "raises    failed  -           raises.plugin            ?",
        "",
        "failed plugins (nothing loads until they are fixed or skipped):",
        "  relaxvm plugin 'broken' (bad.mod from ?) failed to import: ImportError: no module "
        "named nothere",
        "  relaxvm plugin 'raises' failed in relaxvm_register_builtins: KeyError: 'oops'",
    ]
    assert_one_line_error(
        status,
        err,
        "relaxvm plugins: error: relaxvm plugin 'broken' (bad.mod from ?) failed to import: "
        "ImportError: no module named nothere; plugin 'raises' failed too (relaxvm plugins "
        "shows why); to skip 'broken' and 'raises', set RELAXVM_DISABLE_PLUGINS=broken,raises",
    )


def test_plugins_with_the_broken_ones_disabled_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry_points = [
        *_builtins_entry_point(),
        FakeEntryPoint("broken", error=ImportError("gone"), value="bad.mod"),
    ]
    with isolated_plugins(entry_points, load=False, env={"RELAXVM_DISABLE_PLUGINS": "broken"}):
        status, out, err = run_cli(capsys, "plugins")
    assert status == 0 and err == ""
    lines = out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[2 : lines.index("")]}
    assert rows["broken"] == ["broken", "blocked", "-", "bad.mod", "?"]
    assert rows["builtins"][1] == "loaded"


def test_plugins_unknown_disabled_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with isolated_plugins(
        _builtins_entry_point(), load=False, env={"RELAXVM_DISABLE_PLUGINS": "nosuch"}
    ):
        status, out, err = run_cli(capsys, "plugins")
    assert out == ""
    assert_one_line_error(
        status,
        err,
        "relaxvm plugins: error: RELAXVM_DISABLE_PLUGINS names ['nosuch'] but the installed "
        "relaxvm plugins are ['builtins']",
    )


def _legalize_nothing(bb: object, call: object) -> object:
    return call


class _Overrider:
    @relaxvm.hookimpl
    def relaxvm_register_builtins(self, registry: relaxvm.registry.FunctionRegistrar) -> None:
        registry.register("vm.builtin.copy", lambda x: x, override=True)
        registry.register("aaa.helper", lambda: None)

    @relaxvm.hookimpl
    def relaxvm_register_legalizations(
        self, register: relaxvm.registry.LegalizationRegistrar
    ) -> None:
        register.register("relax.add", _legalize_nothing, override=True)
        register.register("relax.add", _legalize_nothing, target="llvm")


@pytest.mark.parametrize("flag", ["-v", "--verbose"])
def test_plugins_verbose_lists_what_each_plugin_registered(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    ours = [ep for ep in installed_entry_points() if ep.name in ("builtins", "ops", "llvm")]
    with isolated_plugins([*ours, FakeEntryPoint("aaa", _Overrider(), value="aaa.plugin")]):
        relaxvm.register_func("aaa.helper", lambda: None, override=True)
        status, out, _ = run_cli(capsys, "plugins", flag)
    assert status == 0
    sections = {
        block.splitlines()[0]: [
            re.split(r"\s{2,}", line.strip()) for line in block.splitlines()[1:]
        ]
        for block in out.split("\n\n")[1:]
    }
    aaa = sections["aaa (loaded): 4 registered"]
    assert aaa == [
        ["function", "aaa.helper", f"replaced by user code ({__name__})"],
        ["function", "vm.builtin.copy", "override"],
        ["legalization", "relax.add", "override"],
        ["legalization", "relax.add [llvm]"],
    ]
    (builtins_header,) = [h for h in sections if h.startswith("builtins (loaded): ")]
    copy = [row for row in sections[builtins_header] if row[1] == "vm.builtin.copy"]
    assert copy == [["function", "vm.builtin.copy", "replaced by plugin 'aaa'"]]
    (ops_header,) = [h for h in sections if h.startswith("ops (loaded): ")]
    ops = {row[1]: row for row in sections[ops_header]}
    assert ops["relax.add"] == ["legalization", "relax.add", "replaced by plugin 'aaa'"]
    assert ops["relax.exp"] == ["legalization", "relax.exp"]
    assert ops["relax.run.print"] == ["function", "relax.run.print"]
    assert sections["llvm (loaded): 1 registered"] == [["target", "llvm"]]


# -- inspect -----------------------------------------------------------------------------------
def test_inspect_text_python_and_stats(capsys: pytest.CaptureFixture[str], demo_file: Path) -> None:
    ex = relaxvm.Executable.load(demo_file)
    status, out, _ = run_cli(capsys, "inspect", str(demo_file))
    assert status == 0 and out.rstrip("\n") == ex.as_text().rstrip("\n")
    status, out, _ = run_cli(capsys, "inspect", str(demo_file), "--text")
    assert status == 0 and out.rstrip("\n") == ex.as_text().rstrip("\n")
    status, out, _ = run_cli(capsys, "inspect", str(demo_file), "--stats")
    assert status == 0 and out.rstrip("\n") == ex.stats().rstrip("\n")
    status, out, _ = run_cli(capsys, "inspect", str(demo_file), "--python")
    assert status == 0 and out.rstrip("\n") == ex.as_python().rstrip("\n")
    compile(out, "as_python", "exec")  # valid Python


def test_inspect_rejects_two_views(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_cli(capsys, "inspect", str(tmp_path / "x.rvm"), "--text", "--stats")
    assert_one_line_error(
        status, err, "relaxvm inspect: error: argument --stats: not allowed with argument --text"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file: "),
        ("dir", "is a directory"),
        (b"", "cannot load executable"),
        (b"\x7fELF" + bytes(60), "cannot load executable"),
    ],
)
def test_inspect_bad_files_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | str | None, message: str
) -> None:
    path = tmp_path / "bad.rvm"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    status, out, err = run_cli(capsys, "inspect", str(path))
    assert out == ""
    assert_one_line_error(status, err, message)
    assert err.startswith("relaxvm inspect: error: ")


def test_inspect_truncated_file(capsys: pytest.CaptureFixture[str], demo_file: Path) -> None:
    data = demo_file.read_bytes()
    demo_file.write_bytes(data[: len(data) // 2])
    status, _, err = run_cli(capsys, "inspect", str(demo_file), "--stats")
    assert_one_line_error(status, err, "cannot load executable")


# -- run ---------------------------------------------------------------------------------------
def test_run_npz_by_parameter_name_matches_numpy(
    capsys: pytest.CaptureFixture[str], demo_file: Path, tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8)).astype("float32")
    w = rng.standard_normal((8, 3)).astype("float32")
    b = rng.standard_normal(3).astype("float32")
    np.savez(tmp_path / "in.npz", b=b, x=x, w=w)  # order differs from the parameters
    out_path = tmp_path / "out.npz"
    status, out, err = run_cli(
        capsys, "run", str(demo_file), "--inputs", str(tmp_path / "in.npz"),
        "--output", str(out_path), "--import", "relaxvm.cli.demo_bytecode:register_kernels",
    )  # fmt: skip
    assert status == 0, err
    expected = demo_bytecode.reference(x, w, b)
    assert "main(x, w, b) returned:" in out
    assert "output: Tensor shape=(4, 3) dtype=float32" in out
    assert f"max={expected.max():.6g}" in out
    with np.load(out_path) as saved:
        assert saved.files == ["output"]
        np.testing.assert_allclose(saved["output"], expected, rtol=1e-6)


def test_run_positional_npy_and_npz_arr_n_and_repeat(
    capsys: pytest.CaptureFixture[str], tuple_file: Path, tmp_path: Path
) -> None:
    x = np.arange(6, dtype="int32").reshape(2, 3)
    y = np.linspace(0, 1, 4).astype("float64")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    status, out, _ = run_cli(
        capsys, "run", str(tuple_file), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
        "--repeat", "3", "--output", str(tmp_path / "o.npz"),
    )  # fmt: skip
    assert status == 0
    assert "output[0]: Tensor shape=(2, 3) dtype=int32 min=0 max=5 mean=2.5" in out
    assert "output[1][0]: Shape(4,)" in out
    assert "output[1][1]: Tensor shape=(4,) dtype=float64" in out
    assert "time over 3 runs: mean" in out
    with np.load(tmp_path / "o.npz") as saved:
        np.testing.assert_array_equal(saved["output_0"], x)
        np.testing.assert_array_equal(saved["output_1_0"], [4])
        np.testing.assert_array_equal(saved["output_1_1"], y)

    np.savez(tmp_path / "pos.npz", x, y)  # keys arr_0, arr_1: positional
    status, out, _ = run_cli(capsys, "run", str(tuple_file), "--inputs", str(tmp_path / "pos.npz"))
    assert status == 0
    assert "output[1][0]: Shape(4,)" in out


def test_run_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tuple_file: Path, demo_file: Path, tmp_path: Path
) -> None:
    x = tmp_path / "x.npy"
    np.save(x, np.zeros(2, "float32"))
    cases = [
        (["run", str(tmp_path / "missing.rvm")], "no such file: "),
        (
            ["run", str(tuple_file), "--func", "nope"],
            "has no function 'nope'; its functions are main",
        ),
        (
            ["run", str(tuple_file), str(x)],
            "no value for y of main(x, y): give them as .npy files, --inputs IN.npz, "
            "--params W.npz or --arg NAME=VALUE",
        ),
        (["run", str(tuple_file), str(x), str(x), str(x)], "main(x, y) takes 2 parameters, got 3"),
        (["run", str(tuple_file), str(x), str(tmp_path / "y.npy")], "no such file: "),
        (["run", str(tuple_file), str(x), "--inputs", str(x)], "not both"),
        (["run", str(tuple_file), "--inputs", str(x)], "expected an .npz file (np.savez)"),
        (["run", str(tuple_file), "--repeat", "-1"], "--repeat must be >= 0"),
        (["run", str(tuple_file), "--import", "no_such_module_xyz"], "cannot import"),
        (["run", str(tuple_file), "--import", "relaxvm.cli.demo:nope"], "has no function 'nope'"),
    ]
    for argv, message in cases:
        status, _, err = run_cli(capsys, *argv)
        assert_one_line_error(status, err, message)

    np.savez(tmp_path / "keys.npz", x=np.zeros(2), z=np.zeros(2))
    status, _, err = run_cli(capsys, "run", str(tuple_file), "--inputs", str(tmp_path / "keys.npz"))
    assert_one_line_error(
        status,
        err,
        "keys z are not parameters of main(x, y); use parameter names or arr_0, arr_1, ...",
    )

    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    status, _, err = run_cli(capsys, "run", str(tuple_file), str(tmp_path / "obj.npy"), str(x))
    assert_one_line_error(status, err, "cannot read")


def test_run_imports_kernels_from_the_working_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cli_test_kernels.py").write_text(
        "import relaxvm\n\n\n"
        "def setup():\n"
        "    relaxvm.register_func('cli_test.double', lambda t: relaxvm.tensor(t.numpy() * 2))\n"
    )
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("cli_test.double", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ib.get().save(tmp_path / "double.rvm")
    np.save(tmp_path / "x.npy", np.array([1.5, -2.0], "float32"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "cli_test_kernels", raising=False)
    with isolated_plugins():
        status, out, err = run_cli(
            capsys, "run", "double.rvm", "x.npy", "--import", "cli_test_kernels:setup"
        )
    sys.modules.pop("cli_test_kernels", None)
    assert status == 0, err
    assert "output: Tensor shape=(2,) dtype=float32 min=-4 max=3 mean=-0.5" in out
    assert str(tmp_path) not in sys.path


def test_run_missing_kernel_suggests_import(
    capsys: pytest.CaptureFixture[str], demo_file: Path
) -> None:
    with isolated_plugins():  # a fresh registry: the demo kernels are not registered
        status, _, err = run_cli(capsys, "run", str(demo_file))
    assert_one_line_error(status, err, "Cannot find PackedFunc demo.output_bytes")
    assert "--import MODULE:FUNCTION" in err


def test_run_error_inside_the_program_names_the_vm_location(
    capsys: pytest.CaptureFixture[str], demo_file: Path, tmp_path: Path
) -> None:
    np.savez(
        tmp_path / "bad.npz",
        x=np.zeros((2, 9), "float32"), w=np.zeros((8, 3), "float32"), b=np.zeros(3, "float32"),
    )  # fmt: skip
    status, _, err = run_cli(
        capsys, "run", str(demo_file), "--inputs", str(tmp_path / "bad.npz"),
        "--import", "relaxvm.cli.demo_bytecode:register_kernels",
    )  # fmt: skip
    assert_one_line_error(status, err, "shape[1] mismatch to specified constant")
    if sys.version_info >= (3, 11):  # exception notes need 3.11
        assert "(in VM function 'main', instruction 4: call vm.builtin.match_shape)" in err


def test_no_command_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys)
    assert_one_line_error(status, err, "relaxvm: error: a command is required (demo, plugins, ")


def test_traceback_flag_reraises(tmp_path: Path) -> None:
    with pytest.raises(cli.CLIError, match="no such file"):
        cli.main(["--traceback", "inspect", str(tmp_path / "missing.rvm")])


def test_python_dash_m_error_has_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = subprocess.run(
        [sys.executable, "-m", "relaxvm", "inspect", str(tmp_path / "missing.rvm")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        result.stderr.strip() == f"relaxvm inspect: error: no such file: {tmp_path / 'missing.rvm'}"
    )


def test_run_accepts_inputs_after_options(tmp_path, capsys):
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("vm.builtin.shape_of", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    path = tmp_path / "shape.rvm"
    ib.get().save(path)
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 3), "float32"))
    assert cli.main(["run", str(path), "--func", "main", str(x)]) == 0
    assert "Shape(2, 3)" in capsys.readouterr().out
    status, _, err = run_cli(capsys, "run", str(path), "--bogus")
    assert_one_line_error(status, err, "relaxvm run: error: unrecognized arguments: --bogus")
