"""DeadCodeElimination, CanonicalizeBindings, BindParams, RewriteDataflowReshape,
FoldConstant, LambdaLift, and the purity guarantee shared by every graph pass."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _graph_helpers import F32, legalizations, run_relax, tensor  # noqa: F401

from relaxvm.errors import CompileError
from relaxvm.ir import relax as rx
from relaxvm.ir import tir
from relaxvm.ir.relax import op
from relaxvm.ir.tir import te
from relaxvm.transform import (
    AnnotateTIROpPattern,
    BindParams,
    CanonicalizeBindings,
    DeadCodeElimination,
    FoldConstant,
    FuseOps,
    FuseTIR,
    LambdaLift,
    LegalizeOps,
    Normalize,
    RewriteDataflowReshape,
)


# ---- DeadCodeElimination ------------------------------------------------------------------
def test_dce_removes_unused_pure_bindings_and_keeps_impure_ones():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x], pure=False):
        bb.emit(op.add(x, x))  # unused, pure: goes
        bb.emit(op.print(x, format="kept"))  # unused, impure: stays
        bb.emit(op.call_packed("my.effect", x, sinfo_args=[rx.ObjectStructInfo()]))
        y = bb.emit(op.multiply(x, x))
        bb.emit_func_output(y)
    out = DeadCodeElimination()(bb.get())

    x2 = rx.Var("x", tensor([2]))
    bb2 = rx.BlockBuilder()
    with bb2.function("main", [x2], pure=False):
        bb2.emit(op.print(x2, format="kept"))
        bb2.emit(op.call_packed("my.effect", x2, sinfo_args=[rx.ObjectStructInfo()]))
        bb2.emit_func_output(bb2.emit(op.multiply(x2, x2)))
    rx.assert_structural_equal(out, bb2.get())


@pytest.mark.usefixtures("legalizations")
def test_dce_removes_unreachable_functions_and_kernels():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.exp(x)))
    with bb.function("helper", [rx.Var("y", tensor([2]))], private=True):
        bb.emit_func_output(rx.Var("y", tensor([2])) if False else bb.emit(op.exp(x)))
    mod = LegalizeOps()(bb.get())
    mod = mod.copy()
    mod["unused_kernel"] = mod["exp"].with_attr("global_symbol", "unused_kernel")
    out = DeadCodeElimination()(mod)
    assert sorted(g.name_hint for g, _ in out) == ["exp", "main"]
    kept = DeadCodeElimination(["helper"])(mod)
    assert "helper" in kept
    with pytest.raises(ValueError, match="not in the module"):
        DeadCodeElimination(["nope"])(mod)


def test_dce_removes_chains_transitively():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.add(x, x))
            bb.emit(op.multiply(a, a))  # uses a, itself unused
            out = bb.emit_output(op.exp(x))
        bb.emit_func_output(out)
    result = DeadCodeElimination()(bb.get())
    (block,) = result["main"].body.blocks
    assert [b.value.op.name for b in block.bindings] == ["relax.exp"]


# ---- CanonicalizeBindings -------------------------------------------------------------------
def test_canonicalize_collapses_trivial_bindings():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.add(x, x))
            b = bb.emit(a)  # b = a
            c = bb.emit(op.multiply(b, b))
            out = bb.emit_output(c)  # gv = c: folded into c's binding
        bb.emit_func_output(out)
    result = CanonicalizeBindings()(bb.get())

    x2 = rx.Var("x", tensor([2]))
    bb2 = rx.BlockBuilder()
    with bb2.function("main", [x2]):
        with bb2.dataflow():
            a2 = bb2.emit(op.add(x2, x2))
            out2 = bb2.emit_output(op.multiply(a2, a2))
        bb2.emit_func_output(out2)
    rx.assert_structural_equal(result, bb2.get())


def test_canonicalize_drops_noop_match_cast_keeps_real_one():
    n = tir.Var("n", "int64")
    x = rx.Var("x", tensor([3]))
    y = rx.Var("y", rx.TensorStructInfo(ndim=1, dtype=F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, y]):
        same = bb.match_cast(x, tensor([3]))  # provably a no-op
        real = bb.match_cast(y, rx.TensorStructInfo([n], F32))  # defines n: stays
        bb.emit_func_output(rx.Tuple([bb.emit(op.add(same, same)), real]))
    result = CanonicalizeBindings()(bb.get())
    bindings = result["main"].body.blocks[0].bindings
    assert sum(isinstance(b, rx.MatchCast) for b in bindings) == 1
    assert bindings[1].value.args[0] is x


# ---- BindParams ---------------------------------------------------------------------------
@pytest.mark.usefixtures("legalizations")
def test_bind_params_by_name_and_symbolic_shape():
    n = tir.Var("n", "int64")
    x = rx.Var("x", rx.TensorStructInfo([n, 2], F32))
    w = rx.Var("w", rx.TensorStructInfo([n, 2], F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w]):
        bb.emit_func_output(bb.emit(op.add(x, w)))
    weights = np.arange(6, dtype=F32).reshape(3, 2)
    out = BindParams("main", {"w": weights})(bb.get())
    func = out["main"]
    assert [p.name_hint for p in func.params] == ["x"]
    assert str(func.params[0].struct_info) == 'R.Tensor((3, 2), dtype="float32")'
    value = func.body.blocks[0].bindings[0].value
    assert isinstance(value.args[1], rx.Constant)
    np.testing.assert_array_equal(value.args[1].data.numpy(), weights)
    legal = LegalizeOps()(out)
    xs = np.ones((3, 2), F32)
    np.testing.assert_array_equal(run_relax(legal, "main", xs), xs + weights)


def test_bind_params_errors():
    x = rx.Var("x", tensor([2]))
    mod = rx.IRModule({"main": rx.Function([x], rx.SeqExpr([], x), tensor([2]))})
    with pytest.raises(CompileError, match="no parameter 'y'"):
        BindParams("main", {"y": np.zeros(2, F32)})(mod)
    with pytest.raises(CompileError, match="no Relax function 'f'"):
        BindParams("f", {})(mod)
    with pytest.raises(CompileError, match="dimension 0 is 2"):
        BindParams("main", {"x": np.zeros(3, F32)})(mod)
    with pytest.raises(CompileError, match="dtype"):
        BindParams("main", {"x": np.zeros(2, "int32")})(mod)
    with pytest.raises(TypeError, match="numpy array"):
        BindParams("main", {"x": [1.0, 2.0]})


# ---- RewriteDataflowReshape -----------------------------------------------------------------
def _reshape_mod(marked: bool) -> rx.IRModule:
    x = rx.Var("x", tensor([2, 6]))
    bb = rx.BlockBuilder()

    def reshape_te(a):
        return te.compute(
            (3, 4), lambda i, j: a[(i * 4 + j) // 6, (i * 4 + j) % 6], name="T_reshape"
        )

    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit_te(reshape_te, x, primfunc_name_hint="reshape")
            out = bb.emit_output(lv)
        bb.emit_func_output(out)
    mod = bb.get()
    if marked:
        gvar = mod.get_global_var("reshape")
        mod.update_func(gvar, mod["reshape"].with_attr("relax.reshape_like", True))
    return mod


@pytest.mark.parametrize("marked", [True, False])
def test_rewrite_dataflow_reshape(marked):
    mod = _reshape_mod(marked)
    out = RewriteDataflowReshape()(mod)
    value = out["main"].body.blocks[0].bindings[0].value
    assert value.op.name == "relax.reshape"
    assert [int(v.value) for v in value.args[1].values] == [3, 4]
    xs = np.arange(12, dtype=F32).reshape(2, 6)
    np.testing.assert_array_equal(run_relax(out, "main", xs), run_relax(mod, "main", xs))


def test_rewrite_dataflow_reshape_leaves_transpose():
    x = rx.Var("x", tensor([2, 3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit_te(lambda a: te.compute((3, 2), lambda i, j: a[j, i]), x)
            out = bb.emit_output(lv)
        bb.emit_func_output(out)
    mod = bb.get()
    assert RewriteDataflowReshape()(mod)["main"] is mod["main"]


# ---- FoldConstant -------------------------------------------------------------------------
@pytest.mark.usefixtures("legalizations")
def test_fold_constant_call_tir_chain():
    x = rx.Var("x", tensor([3]))
    c = rx.const(np.array([1, 2, 3], F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.exp(c))
            b = bb.emit(op.add(a, c))
            out = bb.emit_output(op.multiply(b, x))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    folded = FoldConstant()(mod)
    bindings = folded["main"].body.blocks[0].bindings
    assert isinstance(bindings[1].value, rx.Constant)
    expected = np.exp([1, 2, 3]).astype(F32) + np.array([1, 2, 3], F32)
    np.testing.assert_allclose(bindings[1].value.data.numpy(), expected, rtol=1e-6)
    xs = np.full(3, 2.0, F32)
    np.testing.assert_allclose(run_relax(folded, "main", xs), expected * 2, rtol=1e-6)


@pytest.mark.usefixtures("legalizations")
def test_fold_constant_high_level_op_and_size_limit():
    from relaxvm.transform import PassContext

    c = rx.const(np.ones((4,), F32))
    x = rx.Var("x", tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op.add(op.exp(c), x))
        bb.emit_func_output(out)
    mod = bb.get()
    folded = FoldConstant()(mod)
    first = folded["main"].body.blocks[0].bindings[0].value
    assert isinstance(first, rx.Constant)
    assert "exp" not in folded  # the scratch kernel stays out of the module
    with PassContext(config={"relax.FoldConstant.max_elements": 2}):
        kept = FoldConstant()(mod)
    assert kept["main"].body.blocks[0].bindings[0].value.op.name == "relax.exp"
    with PassContext(config={"relax.FoldConstant.max_iterations": 3}):
        kept = FoldConstant()(mod)
    assert kept["main"].body.blocks[0].bindings[0].value.op.name == "relax.exp"


# ---- LambdaLift -----------------------------------------------------------------------------
def _local_function_mod(capture: bool) -> rx.IRModule:
    x = rx.Var("x", tensor([2]))
    y = rx.Var("y", tensor([2]))
    inner_body = op.add(y, x) if capture else op.add(y, y)
    lv = rx.Var("lv", tensor([2]))
    inner = rx.Function(
        [y], rx.SeqExpr([rx.BindingBlock([rx.VarBinding(lv, inner_body)])], lv), tensor([2])
    )
    f = rx.Var("f", inner.struct_info)
    out = rx.Var("out", tensor([2]))
    body = rx.SeqExpr(
        [rx.BindingBlock([rx.VarBinding(f, inner), rx.VarBinding(out, rx.Call(f, [x]))])], out
    )
    return Normalize()(rx.IRModule({"main": rx.Function([x], body, tensor([2]))}))


def test_lambda_lift_without_captures_calls_global():
    out = LambdaLift()(_local_function_mod(capture=False))
    assert sorted(g.name_hint for g, _ in out) == ["main", "main_f"]
    (binding,) = out["main"].body.blocks[0].bindings
    assert isinstance(binding.value.op, rx.GlobalVar)
    assert binding.value.op.name_hint == "main_f"
    rx.well_formed(out)


def test_lambda_lift_closure_uses_make_and_invoke_closure():
    out = LambdaLift()(_local_function_mod(capture=True))
    lifted = out["main_f"]
    assert [p.name_hint for p in lifted.params] == ["x", "y"]
    make, invoke = out["main"].body.blocks[0].bindings
    assert make.value.op.name == "relax.make_closure"
    assert make.value.args[0].name_hint == "main_f"
    assert invoke.value.op.name == "relax.invoke_closure"
    assert invoke.value.args[0] is make.var
    rx.well_formed(out)


def test_lambda_lift_recursive_local_function():
    n = rx.Var("n", tensor([], "int64"))
    x = rx.Var("x", tensor([2]))
    k = rx.Var("k", tensor([], "int64"))
    sig = rx.FuncStructInfo([tensor([], "int64")], tensor([2]))
    f = rx.Var("f", sig)
    rec = rx.Var("rec", tensor([2]))
    res = rx.Var("res", tensor([2]))
    inner = rx.Function(
        [k],
        rx.SeqExpr(
            [
                rx.BindingBlock(
                    [
                        rx.VarBinding(rec, rx.Call(f, [k])),
                        rx.VarBinding(res, rx.Call(rx.Op.get("relax.add"), [rec, x])),
                    ]
                )
            ],
            res,
        ),
        tensor([2]),
    )
    out_var = rx.Var("out", tensor([2]))
    body = rx.SeqExpr(
        [rx.BindingBlock([rx.VarBinding(f, inner), rx.VarBinding(out_var, rx.Call(f, [n]))])],
        out_var,
    )
    mod = Normalize()(rx.IRModule({"main": rx.Function([n, x], body, tensor([2]))}))
    out = LambdaLift()(mod)
    lifted = out["main_f"]
    assert [p.name_hint for p in lifted.params] == ["x", "k"]
    recursive_call = lifted.body.blocks[0].bindings[0].value
    assert isinstance(recursive_call.op, rx.GlobalVar) and recursive_call.op.name_hint == "main_f"
    assert recursive_call.args[0] is lifted.params[0]


# ---- purity -------------------------------------------------------------------------------
@pytest.mark.usefixtures("legalizations")
def test_graph_passes_never_drop_or_reorder_impure_calls():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x], pure=False):
        with bb.dataflow():
            a = bb.emit(op.exp(x))
            b = bb.emit_output(op.add(a, a))
        bb.emit(op.call_packed("effect.first", x, sinfo_args=[rx.ObjectStructInfo()]))
        bb.emit(op.print(b, format="second"))
        c = bb.emit(op.add(x, x))  # unused and pure
        bb.emit(op.call_packed("effect.third", c, sinfo_args=[rx.ObjectStructInfo()]))
        bb.emit_func_output(b)
    mod = bb.get()
    for pass_ in (
        Normalize(), LegalizeOps(), AnnotateTIROpPattern(), FoldConstant(), FuseOps(),
        FuseTIR(), DeadCodeElimination(), CanonicalizeBindings(), RewriteDataflowReshape(),
        LambdaLift(),
    ):  # fmt: skip
        mod = pass_(mod)
        effects = []
        for block in mod["main"].body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, rx.Call) and isinstance(value.op, rx.ExternFunc):
                    effects.append(value.op.global_symbol)
                elif isinstance(value, rx.Call) and getattr(value.op, "name", "") == "relax.print":
                    effects.append("print")
        assert effects in (
            ["effect.first", "print", "effect.third"],
            ["effect.first", "relax.run.print", "effect.third"],
        ), pass_.name
