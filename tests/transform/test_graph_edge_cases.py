"""Edge cases and error paths of the graph passes: control flow, tuples, nested functions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _graph_helpers import F32, legalizations, run_relax, tensor  # noqa: F401

from relaxvm.errors import CompileError, RelaxVMError
from relaxvm.ir import relax as rx
from relaxvm.ir import tir
from relaxvm.ir.relax import op
from relaxvm.registry import extensions
from relaxvm.transform import (
    AnnotateTIROpPattern,
    BindParams,
    CanonicalizeBindings,
    DeadCodeElimination,
    FoldConstant,
    LambdaLift,
    LegalizeOps,
    Normalize,
)
from relaxvm.transform.annotate_op_pattern import analyze_op_pattern


def _if_mod() -> rx.IRModule:
    c = rx.Var("c", tensor([], "bool"))
    x = rx.Var("x", tensor([2]))
    add = rx.Op.get("relax.add")
    branch = rx.If(c, rx.Call(add, [rx.Call(add, [x, x]), x]), x)
    y = rx.Var("y")
    body = rx.SeqExpr([rx.BindingBlock([rx.VarBinding(y, branch)])], y)
    return rx.IRModule({"main": rx.Function([c, x], body, tensor([2]))})


def test_normalize_if_branches_become_seq_exprs_with_anf():
    mod = Normalize()(_if_mod())
    rx.well_formed(mod)
    (binding,) = mod["main"].body.blocks[0].bindings
    branch = binding.value
    assert isinstance(branch.true_branch, rx.SeqExpr)
    inner = branch.true_branch.blocks[0].bindings
    assert [b.value.op.name for b in inner] == ["relax.add", "relax.add"]
    assert str(binding.var.struct_info) == 'R.Tensor((2,), dtype="float32")'


@pytest.mark.usefixtures("legalizations")
def test_legalize_inside_if_branches():
    mod = LegalizeOps()(Normalize()(_if_mod()))
    branch = mod["main"].body.blocks[0].bindings[0].value
    ops = [b.value.op.name for b in branch.true_branch.blocks[0].bindings]
    assert ops == ["relax.call_tir", "relax.call_tir"]


def test_legalize_failure_is_a_compile_error_with_context():
    def broken(bb, call):
        raise RelaxVMError("cannot handle this shape")

    saved = extensions._snapshot()
    try:
        extensions.register_legalization("relax.exp", broken, override=True)
        x = rx.Var("x", tensor([2]))
        bb = rx.BlockBuilder()
        with bb.function("f", [x]):
            bb.emit_func_output(bb.emit(op.exp(x), "e"))
        with pytest.raises(
            CompileError,
            match=r"relax\.exp in function 'f', binding 'e': legalization failed: cannot handle",
        ):
            LegalizeOps()(bb.get())
    finally:
        extensions._restore(saved)


def test_legalize_result_must_be_an_expression():
    saved = extensions._snapshot()
    try:
        extensions.register_legalization("relax.exp", lambda bb, call: 42, override=True)
        x = rx.Var("x", tensor([2]))
        bb = rx.BlockBuilder()
        with bb.function("f", [x]):
            bb.emit_func_output(bb.emit(op.exp(x)))
        with pytest.raises(CompileError, match="returned int, not a Relax expression"):
            LegalizeOps()(bb.get())
    finally:
        extensions._restore(saved)


def test_annotate_gather_and_opaque_statements():
    data = tir.Buffer("data", (5,), F32)
    idx = tir.Buffer("idx", (3,), "int64")
    out = tir.Buffer("out", (3,), F32)
    i = tir.Var("i", "int64")
    gather = tir.For(i, 0, 3, tir.ForKind.SERIAL, tir.BufferStore(out, data[idx[i]], [i]))
    assert analyze_op_pattern(tir.PrimFunc([data, idx, out], gather)) == 2
    effect = tir.Evaluate(tir.const(0, "int32"))
    assert analyze_op_pattern(tir.PrimFunc([data], effect)) == 8
    # Writing the same element on every iteration of an outer loop is not a map.
    j = tir.Var("j", "int64")
    repeated = tir.For(j, 0, 2, tir.ForKind.SERIAL, tir.For(
        i, 0, 3, tir.ForKind.SERIAL, tir.BufferStore(out, data[i], [i])))  # fmt: skip
    assert analyze_op_pattern(tir.PrimFunc([data, out], repeated)) == 8


def test_dce_inside_if_branches_keeps_effects():
    c = rx.Var("c", tensor([], "bool"))
    x = rx.Var("x", tensor([2]))
    dead, kept = rx.Var("dead", tensor([2])), rx.Var("kept", rx.TupleStructInfo([]))
    true_branch = rx.SeqExpr(
        [rx.BindingBlock([
            rx.VarBinding(dead, rx.Call(rx.Op.get("relax.add"), [x, x])),
            rx.VarBinding(kept, op.print(x, format="side effect")),
        ])],
        x,
    )  # fmt: skip
    y = rx.Var("y", tensor([2]))
    body = rx.SeqExpr(
        [rx.BindingBlock([rx.VarBinding(y, rx.If(c, true_branch, x, tensor([2])))])], y
    )
    mod = Normalize()(rx.IRModule({"main": rx.Function([c, x], body, tensor([2]), False)}))
    out = DeadCodeElimination()(mod)
    inner = out["main"].body.blocks[0].bindings[0].value.true_branch.blocks[0].bindings
    assert [b.var.name_hint for b in inner] == ["kept"]


def test_canonicalize_tuple_field_and_dataflow_scope():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.add(x, x))
            t = bb.emit(rx.Tuple([a, x]))
            first = bb.emit(rx.TupleGetItem(t, 0))
            out = bb.emit_output(op.multiply(first, first))
        bb.emit_func_output(out)
    result = CanonicalizeBindings()(bb.get())
    rx.well_formed(result)
    bindings = result["main"].body.blocks[0].bindings
    multiply = [b for b in bindings if getattr(b.value, "op", None) == rx.Op.get("relax.multiply")]
    assert multiply[0].value.args[0] is bindings[0].var  # reads `a` directly


def test_canonicalize_keeps_output_of_dataflow_var_used_twice():
    x = rx.Var("x", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.add(x, x))
            out1 = bb.emit_output(a)
            out2 = bb.emit_output(a)
        bb.emit_func_output(rx.Tuple([out1, out2]))
    result = CanonicalizeBindings()(bb.get())
    rx.well_formed(result)
    (block,) = result["main"].body.blocks
    assert len(block.bindings) == 1
    assert not isinstance(block.bindings[0].var, rx.DataflowVar)
    assert result["main"].body.body.fields[0] is block.bindings[0].var


@pytest.mark.usefixtures("legalizations")
def test_fold_constant_tuple_outputs_and_get_item():
    from relaxvm.ir.tir import te

    c = rx.const(np.arange(4, dtype=F32))
    bb = rx.BlockBuilder()
    x = rx.Var("x", tensor([4]))

    def two(a):
        return [
            te.compute(a.shape, lambda i: a[i] + 1.0),
            te.compute(a.shape, lambda i: a[i] * 3.0),
        ]

    with bb.function("main", [x]):
        with bb.dataflow():
            pair = bb.emit_te(two, c, primfunc_name_hint="two")
            second = bb.emit(rx.TupleGetItem(pair, 1))
            out = bb.emit_output(op.add(second, x))
        bb.emit_func_output(out)
    folded = FoldConstant()(bb.get())
    bindings = folded["main"].body.blocks[0].bindings
    assert isinstance(bindings[0].value, rx.Tuple)
    assert isinstance(bindings[1].value, rx.Constant)
    np.testing.assert_array_equal(bindings[1].value.data.numpy(), np.arange(4) * 3.0)


def test_fold_constant_leaves_non_dataflow_and_symbolic():
    n = tir.Var("n", "int64")
    x = rx.Var("x", rx.TensorStructInfo([n], F32))
    c = rx.const(np.ones(3, F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(op.exp(c))  # not in a dataflow block: TVM leaves it too
        bb.emit_func_output(rx.Tuple([a, x]))
    mod = bb.get()
    assert FoldConstant()(mod)["main"] is mod["main"]


def test_lambda_lift_nested_names_and_well_formed():
    x = rx.Var("x", tensor([2]))
    y = rx.Var("y", tensor([2]))
    z = rx.Var("z", tensor([2]))
    add = rx.Op.get("relax.add")
    g_res = rx.Var("g_res", tensor([2]))
    g = rx.Function(
        [z],
        rx.SeqExpr([rx.BindingBlock([rx.VarBinding(g_res, rx.Call(add, [z, z]))])], g_res),
        tensor([2]),
    )
    gv = rx.Var("g", g.struct_info)
    f_res = rx.Var("f_res", tensor([2]))
    f = rx.Function(
        [y],
        rx.SeqExpr(
            [rx.BindingBlock([rx.VarBinding(gv, g), rx.VarBinding(f_res, rx.Call(gv, [y]))])], f_res
        ),
        tensor([2]),
    )
    fv = rx.Var("f", f.struct_info)
    out = rx.Var("out", tensor([2]))
    body = rx.SeqExpr(
        [rx.BindingBlock([rx.VarBinding(fv, f), rx.VarBinding(out, rx.Call(fv, [x]))])], out
    )
    mod = Normalize()(rx.IRModule({"main": rx.Function([x], body, tensor([2]))}))
    lifted = LambdaLift()(mod)
    assert sorted(gv.name_hint for gv, _ in lifted) == ["main", "main_f", "main_f_g"]
    rx.well_formed(lifted)
    assert "global_symbol" not in lifted["main_f"].attrs


def test_bind_params_by_var_keeps_others():
    x = rx.Var("x", tensor([2]))
    w = rx.Var("w", tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w]):
        bb.emit_func_output(bb.emit(op.add(x, w)))
    mod = bb.get()
    w_var = mod["main"].params[1]
    out = BindParams("main", {w_var: np.ones(2, F32)})(mod)
    rx.well_formed(out)
    assert [p.name_hint for p in out["main"].params] == ["x"]
    assert out["main"].attrs["global_symbol"] == "main"


def test_annotate_leaves_relax_functions_alone():
    x = rx.Var("x", tensor([2]))
    mod = rx.IRModule({"main": rx.Function([x], rx.SeqExpr([], x), tensor([2]))})
    out = AnnotateTIROpPattern()(mod)
    assert out["main"] is mod["main"]
