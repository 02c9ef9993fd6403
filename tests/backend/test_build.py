"""build / compile: targets, exec modes, kernel linking and export_library."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import relaxvm
import relaxvm.target
from relaxvm.backend.build import build
from relaxvm.backend.vm_shape_lower import VMShapeLower
from relaxvm.errors import CompileError, ExecutableFormatError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.registry import extensions
from relaxvm.testing import interpreter_target, registered_target
from relaxvm.transform import list_pipelines

F32 = "float32"


def derived_shape_module() -> rx.IRModule:
    """A module whose only PrimFunc is a host shape function (n * 2)."""
    n = SymVar("n")
    x = rx.Var("x", rx.TensorStructInfo([n], F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(rx.ShapeExpr([n * 2]))
    return bb.get()


def test_exports_are_lazy_and_named_like_tvm():
    code = (
        "import sys, relaxvm; assert 'relaxvm.ir' not in sys.modules; "
        "assert callable(relaxvm.compile); assert 'relaxvm.ir' not in sys.modules; "
        "from relaxvm import relax; from relaxvm.backend.build import build; "
        "assert relax.build is build; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


def test_unknown_exec_mode_is_a_value_error():
    with pytest.raises(ValueError, match="Unknown exec_mode 'fast'"):
        build(derived_shape_module(), exec_mode="fast")


def test_a_function_can_be_built_directly(exec_mode):
    x = rx.Var("x", rx.TensorStructInfo([2], F32))
    func = rx.Function([x], rx.SeqExpr([], x), rx.TensorStructInfo([2], F32))
    ex = relaxvm.compile(func, relax_pipeline=VMShapeLower(), exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    assert vm["main"](np.ones(2, F32)).shape == (2,)


def test_ill_formed_module_fails_at_build_time():
    x, z = rx.Var("x", rx.TensorStructInfo([2], F32)), rx.Var("z", rx.TensorStructInfo([2], F32))
    y = rx.Var("y", rx.TensorStructInfo([2], F32))
    body = rx.SeqExpr(
        [rx.BindingBlock([rx.VarBinding(y, rx.Call(rx.Op.get("relax.add"), [x, z]))])], y
    )
    mod = rx.IRModule({"main": rx.Function([x], body, rx.TensorStructInfo([2], F32))})
    with pytest.raises(CompileError, match=r"ill-formed.*'main', binding 'y = .*variable 'z'"):
        build(mod, relax_pipeline=None)


def test_kernels_without_a_target_need_llvm():
    extensions.list_target_kinds()  # load the plugins first
    saved = extensions._snapshot()
    try:
        extensions._target_kinds.pop("llvm", None)
        with pytest.raises(CompileError, match=r"kernels \(shape_func\).*'llvm'.*not installed"):
            build(derived_shape_module(), relax_pipeline=VMShapeLower())
    finally:
        extensions._restore(saved)


def test_kernels_are_linked_as_imports(interp, exec_mode):
    ex = build(derived_shape_module(), interp, relax_pipeline=VMShapeLower(), exec_mode=exec_mode)
    assert [m.name for m in ex.imports] == ["interp"]
    assert ex.kernel_libs[0][:2] == ("interp", "interp")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    assert tuple(vm["main"](np.zeros(3, F32))) == (6,)


def test_export_library_round_trips_kernels(interp, exec_mode, tmp_path):
    ex = build(derived_shape_module(), interp, relax_pipeline=VMShapeLower(), exec_mode=exec_mode)
    path = tmp_path / "m.rvm"
    ex.export_library(path)
    loaded = relaxvm.load_module(path)
    assert loaded.exec_mode == exec_mode and len(loaded.imports) == 1
    vm = relaxvm.VirtualMachine(loaded, relaxvm.cpu())
    assert tuple(vm["main"](np.zeros(4, F32))) == (8,)
    # The bare program (save) still needs its kernels from somewhere else.
    ex.save(tmp_path / "bare.rvm")
    assert relaxvm.load_module(tmp_path / "bare.rvm").imports == []


def test_loading_kernels_of_a_missing_target_kind_is_refused(tmp_path):
    with registered_target(interpreter_target("interp_gone")):
        ex = build(derived_shape_module(), "interp_gone", relax_pipeline=VMShapeLower())
        ex.export_library(tmp_path / "m.rvm")
    with pytest.raises(ExecutableFormatError, match=r"target kind 'interp_gone'.*not installed"):
        relaxvm.load_module(tmp_path / "m.rvm")


def test_export_refuses_kinds_that_cannot_serialize(tmp_path):
    with registered_target(interpreter_target("interp_noser", serializable=False)):
        ex = build(derived_shape_module(), "interp_noser", relax_pipeline=VMShapeLower())
        with pytest.raises(ExecutableFormatError, match="'interp_noser', which cannot serialize"):
            ex.export_library(tmp_path / "m.rvm")


def test_failing_target_build_is_a_compile_error():
    def broken(mod, target):
        raise RuntimeError("no registers left")

    kind = extensions.TargetKind(name="broken", device="cpu", build=broken)
    message = r"target 'broken' failed.*shape_func.*no registers"
    with registered_target(kind), pytest.raises(CompileError, match=message):
        build(derived_shape_module(), "broken", relax_pipeline=VMShapeLower())


def test_invalid_target_and_pipeline_arguments():
    with pytest.raises(CompileError, match="invalid target 'nosuchkind'"):
        build(derived_shape_module(), "nosuchkind")
    with pytest.raises(CompileError, match="relax_pipeline must be"):
        build(derived_shape_module(), relax_pipeline=3)
    with pytest.raises(CompileError, match="unknown pipeline 'defualt'.*did you mean 'default'"):
        build(derived_shape_module(), relax_pipeline="defualt")


def test_builtin_pipelines_are_registered():
    assert {"default", "default_build", "zero"} <= set(list_pipelines())


def test_packed_call_module_needs_no_target(exec_mode):
    x = rx.Var("x", rx.TensorStructInfo([2], F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(
            bb.emit(op.call_packed("test.backend.double", x, sinfo_args=x.struct_info))
        )
    ex = build(bb.get(), relax_pipeline=VMShapeLower(), exec_mode=exec_mode)
    assert ex.imports == []
    out = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](np.ones(2, F32))
    np.testing.assert_array_equal(out.numpy(), [2, 2])


def test_target_passes_join_the_default_pipeline():
    from relaxvm.transform import get_pipeline, module_pass

    ran: list[str] = []

    @module_pass(name="MarkTarget")
    def mark(mod, ctx):
        ran.append(str(ctx.target.kind.name) if ctx.target is not None else "none")
        return mod

    kind = extensions.TargetKind(
        name="marked",
        device="cpu",
        build=interpreter_target().build,
        relax_passes=lambda target: [mark],
    )
    with registered_target(kind):
        pipeline = get_pipeline("default", target=relaxvm.target.Target("marked"))
        names = [p.name for p in pipeline]
        assert names.index("FuseTIR") < names.index("MarkTarget") < names.index("ToNonDataflow")
        assert "FuseOps" not in [p.name for p in get_pipeline("default", fuse=False)]
        x = rx.Var("x", rx.TensorStructInfo([2], F32))
        bb = rx.BlockBuilder()
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(op.add(x, x)))
        ex = relaxvm.compile(bb.get(), "marked")
        assert ran == ["marked"]
        out = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](np.ones(2, F32))
        np.testing.assert_array_equal(out.numpy(), [2, 2])
