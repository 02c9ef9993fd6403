"""TVM's spellings: lazy submodules on ``relaxvm``, ``relaxvm.nd``, ``IRModule.show``,
``relax.transform`` / ``relax.get_pipeline``, ``Target.current``, ``Executable.jit`` and the
explicit keywords of ``relaxvm.compile`` (docs/tvm_compat.md)."""

from __future__ import annotations

import inspect
import io
import subprocess
import sys
import threading

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMValueError
from relaxvm.script import from_source
from relaxvm.target import Target, TargetError

SOURCE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        y = R.add(x, x)
        return y
"""


@pytest.fixture(scope="module")
def mod():
    return from_source(SOURCE)


# ---- lazy attributes, in a process that imported nothing else ------------------------------
FRESH_PROCESS_CHECKS = """
import sys
import relaxvm

eager = sorted(m for m in ("relaxvm.ir", "relaxvm.transform", "relaxvm.script",
                           "relaxvm.testing", "relaxvm.target") if m in sys.modules)
assert eager == [], f"imported by `import relaxvm`: {eager}"
import numpy as np

x = relaxvm.nd.array(np.arange(3, dtype="float32"))
assert isinstance(x, relaxvm.nd.NDArray) and x.numpy().tolist() == [0.0, 1.0, 2.0]
assert relaxvm.nd.empty((2, 2)).shape == (2, 2)
assert relaxvm.IRModule is relaxvm.ir.IRModule
assert relaxvm.relax.transform is relaxvm.transform
assert callable(relaxvm.relax.get_pipeline) and callable(relaxvm.relax.VirtualMachine)
assert relaxvm.target.Target.current() is None and relaxvm.Target is relaxvm.target.Target
assert callable(relaxvm.transform.LegalizeOps)
assert callable(relaxvm.testing.isolated_plugins)
assert callable(relaxvm.script.from_source)
assert callable(relaxvm.ir.assert_structural_equal)
assert relaxvm.tir.PrimFunc is not None and callable(relaxvm.te.compute)
assert callable(relaxvm.registry.get_global_func) and relaxvm.runtime.Tensor is relaxvm.Tensor
assert relaxvm.vm.VirtualMachine is relaxvm.VirtualMachine
assert callable(relaxvm.security.trusting_object_code)
assert relaxvm.errors.CompileError is not None
assert callable(relaxvm.extensions.get_target_kind) and hasattr(relaxvm.plugins, "_loaded")
assert callable(relaxvm.Executable.jit) and callable(relaxvm.IRModule.show)
assert relaxvm.from_dlpack is relaxvm.runtime.from_dlpack is relaxvm.nd.from_dlpack
print("ok")
"""


def test_every_spelling_works_in_a_fresh_process():
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS_CHECKS], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_dir_lists_lazy_names_without_importing_them():
    code = (
        "import sys, relaxvm\n"
        "names = dir(relaxvm)\n"
        "for name in ('nd', 'transform', 'testing', 'script', 'target', 'IRModule', 'Target'):\n"
        "    assert name in names, name\n"
        "assert 'relaxvm.transform' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_attribute_suggests_a_close_name():
    with pytest.raises(AttributeError) as info:
        relaxvm.cmopile  # noqa: B018
    assert (
        str(info.value) == "module 'relaxvm' has no attribute 'cmopile'. Did you mean: 'compile'?"
    )
    assert info.value.name == "cmopile"
    with pytest.raises(AttributeError, match="Did you mean: 'transform'"):
        relaxvm.transfrom  # noqa: B018
    with pytest.raises(AttributeError) as info:
        relaxvm.zzzzqqq  # noqa: B018
    assert str(info.value) == "module 'relaxvm' has no attribute 'zzzzqqq'"


def test_from_import_of_lazy_names():
    from relaxvm import IRModule, Target, nd, transform

    assert IRModule is relaxvm.ir.IRModule
    assert Target is relaxvm.target.Target
    assert nd.NDArray is relaxvm.Tensor
    assert transform.PassContext is relaxvm.transform.pass_infra.PassContext


_IMPORT_STATEMENTS = """
import sys
import relaxvm
from relaxvm.relax.frontend.onnx import from_onnx
import relaxvm.relax.transform
import relaxvm.relax.analysis as analysis
from relaxvm.relax.op import nn
from relaxvm.relax import frontend
import relaxvm.frontend.onnx
import relaxvm.ir.relax.analysis

assert from_onnx is relaxvm.frontend.onnx.from_onnx
assert relaxvm.relax.transform is relaxvm.transform
assert analysis is relaxvm.ir.relax.analysis
assert nn is relaxvm.ir.relax.op.nn
assert frontend is relaxvm.frontend is relaxvm.relax.frontend
# one module object per real module: no copy loaded under the alias
assert sys.modules["relaxvm.relax.frontend.onnx"] is sys.modules["relaxvm.frontend.onnx"]
assert sys.modules["relaxvm.relax.frontend.onnx"].__name__ == "relaxvm.frontend.onnx"
for missing in ("relaxvm.relax.nosuch", "relaxvm.relax.frontend.nosuch"):
    try:
        __import__(missing)
    except ModuleNotFoundError as err:
        assert str(err) == f"No module named {missing!r}", str(err)
    else:
        raise AssertionError(missing)
print("ok")
"""


def test_tvm_import_statements_reach_the_real_modules():
    """``from tvm.relax.frontend.onnx import from_onnx`` with only the import line changed."""
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_STATEMENTS], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_frontend_is_a_lazy_attribute():
    assert relaxvm.frontend.detach_params is not None
    assert relaxvm.relax.frontend is relaxvm.frontend


# ---- relaxvm.nd ------------------------------------------------------------------------------
def test_nd_array_copies_and_keeps_dtype():
    source = np.arange(6, dtype="int32").reshape(2, 3)
    x = relaxvm.nd.array(source)
    source[0, 0] = 100  # a copy, as tvm.nd.array makes
    assert x.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert str(x.dtype) == "int32"
    assert x.device == relaxvm.cpu(0)
    y = relaxvm.nd.array(x, device=relaxvm.cpu(0), mem_scope="global")
    assert y is not x and y.numpy().tolist() == x.numpy().tolist()


def test_from_dlpack_shares_numpy_memory():
    source = np.arange(4, dtype="float32")
    for spelling in (relaxvm.from_dlpack, relaxvm.nd.from_dlpack):
        x = spelling(source)
        source[0] = 7.0
        assert x.numpy()[0] == 7.0
        source[0] = 0.0


def test_nd_empty_defaults_to_float32_on_cpu():
    x = relaxvm.nd.empty([4, 5])
    assert x.shape == (4, 5) and str(x.dtype) == "float32" and x.device == relaxvm.cpu(0)
    assert str(relaxvm.nd.empty((3,), "int64").dtype) == "int64"


def test_nd_rejects_other_memory_scopes():
    with pytest.raises(VMValueError, match="nd.array: mem_scope 'texture' is not supported"):
        relaxvm.nd.array(np.zeros(2), mem_scope="texture")
    with pytest.raises(VMValueError, match="nd.empty: mem_scope 'shared' is not supported"):
        relaxvm.nd.empty((2,), mem_scope="shared")


# ---- IRModule.show -------------------------------------------------------------------------
def test_show_prints_the_script(mod, capsys):
    mod.show()
    assert capsys.readouterr().out == mod.script() + "\n"


def test_show_options(mod):
    out = io.StringIO()
    mod.show(print_line_numbers=True, show_meta=True, file=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(" 1 # from relaxvm.script")
    assert any(line.endswith("class Module:") for line in lines)
    plain = io.StringIO()
    mod.show(style="plain", file=plain)
    assert "\x1b[" not in plain.getvalue()


def test_show_colours_when_asked(mod):
    pytest.importorskip("pygments")
    for style in ("ansi", "light", "dark"):
        out = io.StringIO()
        mod.show(style, file=out)
        assert "\x1b[" in out.getvalue(), style
        assert "ir_module" in out.getvalue()


def test_show_rejects_unknown_style(mod):
    with pytest.raises(VMValueError, match=r"IRModule.show: unknown style 'neon'"):
        mod.show(style="neon")


def test_show_black_format_without_black_warns(mod, monkeypatch):
    monkeypatch.setitem(sys.modules, "black", None)  # importing it now raises ImportError
    out = io.StringIO()
    with pytest.warns(UserWarning, match="black is not installed"):
        mod.show(black_format=True, file=out)
    assert out.getvalue() == mod.script() + "\n"


# ---- relax.transform, relax.get_pipeline ------------------------------------------------------
def test_relax_transform_and_get_pipeline(mod):
    from relaxvm import relax
    from relaxvm.transform import Pass

    assert relax.transform is relaxvm.transform
    legalized = relax.transform.LegalizeOps()(mod)
    assert any(type(func).__name__ == "PrimFunc" for _, func in legalized.functions.items()), (
        legalized.script()
    )
    assert isinstance(relax.get_pipeline("default"), Pass)
    with pytest.raises(relaxvm.errors.CompileError, match="unknown pipeline 'defualt'"):
        relax.get_pipeline("defualt")


# ---- Target.current and target scopes --------------------------------------------------------
def test_target_scope_nests_and_restores():
    assert Target.current() is None
    outer, inner = Target("llvm"), Target("llvm -mcpu=generic")
    with outer as entered:
        assert entered is outer and Target.current() is outer
        with inner:
            assert Target.current() is inner
        assert Target.current() is outer
    assert Target.current() is None


def test_target_current_allow_none_false_raises():
    with pytest.raises(TargetError, match="Target.current: no target is in scope"):
        Target.current(allow_none=False)
    with Target("llvm") as target:
        assert Target.current(allow_none=False) is target


def test_target_scope_is_per_thread():
    seen: list[object] = []
    with Target("llvm"):
        thread = threading.Thread(target=lambda: seen.append(Target.current()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_target_scope_exits_even_on_error():
    with pytest.raises(RuntimeError, match="boom"), Target("llvm"):
        raise RuntimeError("boom")
    assert Target.current() is None


def test_target_exit_out_of_order_is_an_error():
    a, b = Target("llvm"), Target("llvm")
    a.__enter__()
    b.__enter__()
    with pytest.raises(TargetError, match="is not the innermost target scope"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert Target.current() is None


def test_compile_uses_the_target_in_scope(mod):
    with Target("llvm -mcpu=generic"):
        ex = relaxvm.compile(mod)
    assert [target for _, target, _ in ex.kernel_libs] == [str(Target("llvm -mcpu=generic"))]


def test_build_runs_inside_the_target_scope(mod):
    from relaxvm.transform import module_pass

    seen: list[object] = []

    @module_pass(opt_level=0, name="RecordTarget")
    def record(module, ctx):
        seen.append(Target.current())
        return module

    pipeline = relaxvm.transform.Sequential([record, relaxvm.relax.get_pipeline("default")])
    relaxvm.compile(mod, "llvm", relax_pipeline=pipeline)
    assert [str(t) for t in seen] == [str(Target("llvm"))]
    assert Target.current() is None


# ---- Executable.jit -------------------------------------------------------------------------
def test_jit_returns_a_module_the_vm_runs(mod):
    ex = relaxvm.compile(mod, target="llvm")
    rt_mod = ex.jit()
    assert rt_mod is ex
    vm = relaxvm.relax.VirtualMachine(rt_mod, relaxvm.cpu())
    x = relaxvm.nd.array(np.ones((2, 3), "float32"))
    assert vm["main"](x).numpy().tolist() == [[2.0] * 3] * 2
    assert ex.jit(force_recompile=True) is ex


def test_jit_rejects_external_compilation(mod):
    ex = relaxvm.compile(mod, target="llvm")
    with pytest.raises(VMValueError, match="Executable.jit: fcompile is not supported"):
        ex.jit(fcompile=lambda *args: None)
    with pytest.raises(VMValueError, match=r"Executable.jit: addons \['a.o'\] are not supported"):
        ex.jit(addons=["a.o"])


# ---- relaxvm.compile's keywords -------------------------------------------------------------
def test_compile_signature_is_explicit():
    params = inspect.signature(relaxvm.compile).parameters
    assert list(params) == ["mod", "target", "relax_pipeline", "params", "exec_mode"]
    assert params["target"].default is None
    assert params["relax_pipeline"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["relax_pipeline"].default == "default"
    assert params["exec_mode"].default == "bytecode"
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_compile_keywords_behave_as_build(mod):
    ex = relaxvm.compile(mod, "llvm", exec_mode="compiled")
    assert ex.exec_mode == "compiled"
    with pytest.raises(ValueError, match="Unknown exec_mode 'jit'"):
        relaxvm.compile(mod, exec_mode="jit")
    with pytest.raises(TypeError, match="unexpected keyword argument 'pipeline'"):
        relaxvm.compile(mod, pipeline="default")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional argument"):
        relaxvm.compile(mod, "llvm", "default")  # type: ignore[misc]


def test_profiling_vm_as_tvm_builds_it(mod):
    # TVM: VirtualMachine(ex, dev, profile=True) then vm.profile(...); here every VM profiles.
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, target="llvm"), relaxvm.cpu(), profile=True)
    x = relaxvm.nd.array(np.ones((2, 3), "float32"))
    report = vm.profile("main", x)
    assert report.num_calls > 0 and "Name" in report.table()
    assert vm["main"](x).numpy().tolist() == [[2.0] * 3] * 2


# ---- TVM's error names ------------------------------------------------------------------------
def test_tvm_error_names_are_the_relaxvm_classes():
    from relaxvm.errors import RelaxVMError
    from relaxvm.script import ScriptError

    assert relaxvm.TVMError is RelaxVMError
    assert relaxvm.error.TVMError is RelaxVMError
    assert relaxvm.error.InternalError is RelaxVMError
    assert relaxvm.error.DiagnosticError is ScriptError
    assert relaxvm.error.OpNotImplemented is relaxvm.errors.OpNotImplemented


def test_tvm_error_catches_what_relaxvm_raises():
    from relaxvm import relax

    with pytest.raises(relaxvm.TVMError, match="relax.reshape"):
        bb = relax.BlockBuilder()
        bb.normalize(relax.op.reshape(relax.Var("x", relax.TensorStructInfo([2, 3])), (4, 2)))
    with pytest.raises(relaxvm.error.DiagnosticError, match="undefined name 'nope'"):
        from_source("@R.function\ndef f(x: R.Tensor((2,), 'float32')):\n    return nope\n")


# ---- import paths ---------------------------------------------------------------------------
_TVM_IMPORTS = """
import sys
import relaxvm
import relaxvm.tir
import relaxvm.te
from relaxvm.tir.function import PrimFunc
from relaxvm.ir import Op, DummyGlobalInfo
from relaxvm.ir.base import assert_structural_equal
from relaxvm.script.parser import ir as I, relax as R, tir as T
from relaxvm.relax.testing.vm import check_saved_func
import relaxvm.ir.relax.expr
import relaxvm.ir.tir.function

assert relaxvm.tir is relaxvm.ir.tir and relaxvm.te is relaxvm.ir.tir.te
assert PrimFunc is relaxvm.ir.tir.function.PrimFunc
# one module per real module, which keeps its own name and spec
assert sys.modules["relaxvm.tir.function"] is relaxvm.ir.tir.function
assert relaxvm.ir.tir.function.__spec__.name == "relaxvm.ir.tir.function"
assert Op is relaxvm.ir.relax.expr.Op
assert assert_structural_equal is relaxvm.ir.assert_structural_equal
assert I is relaxvm.script.ir and R is relaxvm.script.relax and T is relaxvm.script.tir
assert relaxvm.script.ir_module is relaxvm.script.ir.ir_module
assert relaxvm.script.parser.parse is relaxvm.script.from_source
try:
    import relaxvm.tir.nosuch
except ModuleNotFoundError as err:
    assert str(err) == "No module named 'relaxvm.tir.nosuch'", str(err)
else:
    raise AssertionError("relaxvm.tir.nosuch imported")
print("ok")
"""


def test_tvm_import_paths_give_the_real_modules():
    result = subprocess.run([sys.executable, "-c", _TVM_IMPORTS], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_import_relaxvm_does_not_load_the_aliased_packages():
    code = "import sys, relaxvm\nassert 'relaxvm.ir' not in sys.modules\nrelaxvm.error\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tir_node_names():
    from relaxvm import ir, tir

    for name in ("Div", "Mod", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not"):
        assert getattr(tir, name) is getattr(ir, name), name
    x = tir.Var("x", "int32")
    assert isinstance(tir.EQ(x, 1), tir.EQ)


def test_dummy_global_info_equals_its_kind():
    from relaxvm.ir import DummyGlobalInfo, GlobalInfo

    assert DummyGlobalInfo() == DummyGlobalInfo()
    assert hash(DummyGlobalInfo()) == hash(DummyGlobalInfo())
    assert DummyGlobalInfo() != GlobalInfo()
    assert isinstance(DummyGlobalInfo(), GlobalInfo)


# ---- relax namespace --------------------------------------------------------------------------
def test_relax_namespace_has_tvm_builders():
    from relaxvm import relax

    assert relax.ExecBuilder is relaxvm.ExecBuilder
    assert relax.call_tir is relax.op.call_tir
    assert relax.call_dps_packed is relax.op.call_dps_packed
    assert relax.call_tir_inplace is relax.op.call_tir_inplace
    assert relax.call_pure_packed is relax.op.call_pure_packed
    assert relax.testing.vm.check_saved_func is not None


def test_relax_testing_vm_packed_functions():
    import relaxvm.relax.testing.vm

    get = relaxvm.get_global_func
    a = relaxvm.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    out = relaxvm.empty((2, 3), "float32")
    get("test.vm.identity")(a, out)
    np.testing.assert_array_equal(out.numpy(), a.numpy())
    tiled = relaxvm.empty((2, 6), "float32")
    get("test.vm.tile")(a, tiled)
    np.testing.assert_array_equal(tiled.numpy(), np.tile(a.numpy(), (1, 2)))
    np.testing.assert_array_equal(get("test.vm.add")(a, a).numpy(), 2 * a.numpy())
    np.testing.assert_array_equal(get("test.vm.mul")(a, a).numpy(), a.numpy() ** 2)
    np.testing.assert_array_equal(get("test.vm.subtract_one")(a).numpy(), a.numpy() - 1)
    assert get("test.vm.equal_zero")(relaxvm.tensor(np.zeros(3, "int32"))).numpy().item() is True
    assert get("test.vm.add_scalar")(2, 3) == 5
    assert get("test.vm.move")(a) is a
    assert get("test.vm.get_device_id")(relaxvm.cpu(0)) == 0
    assert get("test.vm.check_if_defined")(None) is False


def test_check_saved_func_runs_directly_and_saved(mod):
    from relaxvm.relax.testing.vm import check_saved_func

    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, target="llvm"), relaxvm.cpu())
    x = relaxvm.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    result = check_saved_func(vm, "main", x)
    np.testing.assert_array_equal(result.numpy(), 2 * x.numpy())
    assert "main_saved" in vm


# ---- te forms TVM code uses: tensor arithmetic, index_dtype_override, ExecBuilder checks -------
def test_te_tensor_arithmetic_through_the_tvm_namespace():
    te = relaxvm.te
    x = te.placeholder((4,), "float32", name="x")
    y = (x + 1) * 2 - 1 / x
    func = te.create_prim_func([x, y], index_dtype_override="int64")
    assert [t.name for t in (x + 1, 2 - x, x * x, x / 2, -x)] == [
        "T_add",
        "T_subtract",
        "T_multiply",
        "T_divide",
        "T_multiply",
    ]
    xv = np.array([1.0, 2.0, 4.0, 0.5], "float32")
    out = np.zeros(4, "float32")
    relaxvm.tir.run_prim_func(func, xv, out)
    np.testing.assert_allclose(out, (xv + 1) * 2 - 1 / xv, rtol=1e-6)


def test_relax_exec_builder_refuses_a_read_of_the_register_being_written():
    ib = relaxvm.relax.ExecBuilder()
    with ib.function("func0", num_inputs=2):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(2)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with pytest.raises(relaxvm.TVMError, match=r"register r\(2\) .* used as input"):
        ib.get()
