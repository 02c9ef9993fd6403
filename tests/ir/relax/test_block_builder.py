"""BlockBuilder: building functions, normalizing to A-normal form, emit_te and errors."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import te, tir
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.relax.block_builder import BlockBuilder, BlockBuilderError
from relaxvm.ir.relax.op.registry import OpError


def tensor(shape: list, dtype: str = "float32") -> rx.TensorStructInfo:
    return rx.TensorStructInfo(shape, dtype)


def bindings(func: rx.Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


# ---- the seed example and ANF --------------------------------------------------------------
def test_seed_example_add() -> None:
    x = rx.Var("x", tensor([3, 4]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(op.add(x, x))
        gvar = bb.emit_func_output(y)
    mod = bb.get()
    rx.well_formed(mod)
    main = mod["main"]
    assert gvar is mod.get_global_var("main")
    assert main.attrs["global_symbol"] == "main"
    assert main.ret_struct_info == tensor([3, 4])
    assert y.name_hint == "gv" and not isinstance(y, rx.DataflowVar)
    assert len(main.body.blocks) == 1 and not main.body.blocks[0].is_dataflow
    # The same function written by hand.
    hx = rx.Var("x", tensor([3, 4]))
    hy = rx.Var("y", tensor([3, 4]))
    body = rx.SeqExpr([rx.BindingBlock([rx.VarBinding(hy, op.add(hx, hx))])], hy)
    expected = rx.Function([hx], body, tensor([3, 4]), attrs={"global_symbol": "main"})
    rx.assert_structural_equal(main, expected)


def test_nested_expression_is_bound_in_anf() -> None:
    x = rx.Var("x", tensor([2, 3]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(op.multiply(op.add(x, x), op.exp(op.add(x, x))))
        bb.emit_func_output(out)
    mod = bb.get()
    rx.well_formed(mod)
    values = [b.value for b in bindings(mod["main"])]
    assert [v.op.name for v in values] == [
        "relax.add",
        "relax.add",
        "relax.exp",
        "relax.multiply",
    ]
    for value in values:  # every argument is now a leaf
        assert all(isinstance(a, (rx.Var, rx.Constant)) for a in value.args)
        assert value.struct_info == tensor([2, 3])
    hx = rx.Var("x", tensor([2, 3]))
    a, b, c, d = (rx.Var(name, tensor([2, 3])) for name in "abcd")
    block = rx.BindingBlock(
        [
            rx.VarBinding(a, op.add(hx, hx)),
            rx.VarBinding(b, op.add(hx, hx)),
            rx.VarBinding(c, op.exp(b)),
            rx.VarBinding(d, op.multiply(a, c)),
        ]
    )
    expected = rx.Function(
        [hx], rx.SeqExpr([block], d), tensor([2, 3]), attrs={"global_symbol": "main"}
    )
    rx.assert_structural_equal(mod["main"], expected)


def test_tuple_of_calls_keeps_tuple_inline_and_binds_fields() -> None:
    x = rx.Var("x", tensor([4]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        t = bb.emit(rx.Tuple([op.add(x, x), x]))
        first = bb.emit(rx.TupleGetItem(t, 0))
        bb.emit_func_output(first)
    mod = bb.get()
    rx.well_formed(mod)
    binds = bindings(mod["main"])
    assert isinstance(binds[0].value, rx.Call)
    assert isinstance(binds[1].value, rx.Tuple) and binds[1].value.fields[0] is binds[0].var
    assert binds[1].var.struct_info == rx.TupleStructInfo([tensor([4]), tensor([4])])
    assert first.struct_info == tensor([4])


def test_normalize_fills_struct_info_without_binding() -> None:
    x = rx.Var("x", tensor([2, 2]))
    bb = BlockBuilder()
    call = bb.normalize(op.add(x, x))
    assert isinstance(call, rx.Call) and call.struct_info == tensor([2, 2])
    leaf = bb.normalize(x)
    assert leaf is x
    with bb.function("main", [x]):
        normalized = bb.normalize(op.add(op.add(x, x), x))
        # The inner call is bound in the current block, the outer one is not.
        assert isinstance(normalized.args[0], rx.Var)
        out = bb.emit(normalized)
        bb.emit_func_output(out)
    assert len(bindings(bb.get()["main"])) == 2


# ---- dataflow, names and blocks --------------------------------------------------------------
def test_dataflow_block_with_outputs() -> None:
    x = rx.Var("x", tensor([3]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        before = bb.emit(op.add(x, x))
        with bb.dataflow():
            lv = bb.emit(op.multiply(before, x))
            lv_named = bb.emit(op.add(lv, lv), name_hint="doubled")
            gv = bb.emit_output(op.exp(lv_named))
        after = bb.emit(op.add(gv, x))
        bb.emit_func_output(after)
    mod = bb.get()
    rx.well_formed(mod)
    blocks = mod["main"].body.blocks
    assert [block.is_dataflow for block in blocks] == [False, True, False]
    # TVM's names: the first is the bare prefix, then prefix1, prefix2...
    assert isinstance(lv, rx.DataflowVar) and lv.name_hint == "lv"
    assert lv_named.name_hint == "doubled"
    assert type(gv) is rx.Var and gv.name_hint == "gv1"
    assert before.name_hint == "gv" and after.name_hint == "gv2"
    assert [b.var for b in blocks[1].bindings] == [lv, lv_named, gv]


def test_emit_func_output_of_a_tuple() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit_output(op.add(x, x))
        bb.emit_func_output([a, x])
    main = bb.get()["main"]
    rx.well_formed(bb.get())
    assert isinstance(main.body.body, rx.Tuple)
    assert main.ret_struct_info == rx.TupleStructInfo([tensor([2]), tensor([2])])


def test_private_function_has_no_global_symbol_and_params_at_output() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("helper", private=True, attrs={"note": 1}):
        bb.emit_func_output(x, params=[x])
    helper = bb.get()["helper"]
    rx.well_formed(bb.get())
    assert "global_symbol" not in helper.attrs and helper.attrs["note"] == 1
    assert helper.params == (x,)


# ---- symbolic shapes and match_cast ---------------------------------------------------------
def test_symbolic_shapes_through_matmul_and_add() -> None:
    n = SymVar("n")
    x = rx.Var("x", tensor([n, 4]))
    w = rx.Var("w", tensor([4, 8]))
    b = rx.Var("b", tensor([8]))
    bb = BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            out = bb.emit_output(op.add(op.matmul(x, w), b))
        bb.emit_func_output(out)
    mod = bb.get()
    rx.well_formed(mod)
    assert out.struct_info == tensor([n, 8])
    matmul = bindings(mod["main"])[0]
    assert isinstance(matmul.var, rx.DataflowVar)
    assert matmul.var.struct_info == tensor([n, 8])
    assert mod["main"].ret_struct_info == tensor([n, 8])


def test_match_cast_defines_a_new_symbolic_var() -> None:
    x = rx.Var("x", rx.TensorStructInfo(dtype="float32", ndim=2))
    m = SymVar("m")
    bb = BlockBuilder()
    with bb.function("main", [x]):
        cast = bb.match_cast(x, tensor([m, 3]))
        doubled = bb.emit(op.add(cast, cast))
        bb.emit_func_output(doubled)
    mod = bb.get()
    rx.well_formed(mod)
    first = bindings(mod["main"])[0]
    assert isinstance(first, rx.MatchCast)
    assert first.var is cast and first.struct_info == tensor([m, 3])
    assert doubled.struct_info == tensor([m, 3])
    assert mod["main"].ret_struct_info == tensor([m, 3])


def test_match_cast_in_dataflow_makes_a_dataflow_var() -> None:
    x = rx.Var("x", rx.TensorStructInfo(dtype="float32", ndim=1))
    k = SymVar("k")
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            cast = bb.match_cast(op.exp(x), tensor([k]))
            out = bb.emit_output(cast)
        bb.emit_func_output(out)
    rx.well_formed(bb.get())
    assert isinstance(cast, rx.DataflowVar)
    assert out.struct_info == tensor([k])


# ---- emit_te ----------------------------------------------------------------------------------
def _te_add(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return te.compute(a.shape, lambda i, j: a[i, j] + b[i, j], name="C")


def _te_row_sum(a: te.Tensor) -> te.Tensor:
    k = te.reduce_axis((0, a.shape[1]), name="k")
    return te.compute((a.shape[0],), lambda i: te.sum(a[i, k], axis=k), name="S")


def test_emit_te_elementwise_runs_like_numpy() -> None:
    n = SymVar("n")
    x = rx.Var("x", tensor([n, 4]))
    y = rx.Var("y", tensor([n, 4]))
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv = bb.emit_te(_te_add, x, y)
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    mod = bb.get()
    rx.well_formed(mod)
    assert "te_add" in mod  # the name, without leading underscores
    call = bindings(mod["main"])[0].value
    assert call.op.name == "relax.call_tir"
    assert call.args[0] is mod.get_global_var("te_add")
    assert list(call.args[1].fields) == [x, y]
    assert lv.struct_info == tensor([n, 4])
    prim = mod["te_add"]
    # As TVM, the kernel is private: no global_symbol until code generation attaches one.
    assert isinstance(prim, tir.PrimFunc) and prim.attrs == {"tir.noalias": True}
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 4), "float32"), rng.random((5, 4), "float32")
    c = np.zeros((5, 4), "float32")
    tir.run_prim_func(prim, a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_emit_te_reduction_runs_like_numpy() -> None:
    x = rx.Var("x", tensor([3, 6]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit_te(_te_row_sum, x, primfunc_name_hint="row_sum")
        bb.emit_func_output(out)
    mod = bb.get()
    rx.well_formed(mod)
    assert out.struct_info == tensor([3])
    a = np.arange(18, dtype="float32").reshape(3, 6)
    s = np.zeros(3, "float32")
    tir.run_prim_func(mod["row_sum"], a, s)
    np.testing.assert_allclose(s, a.sum(axis=1))


def test_emit_te_deduplicates_and_uniquifies_names() -> None:
    x = rx.Var("x", tensor([2, 2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit_te(_te_add, x, x, primfunc_name_hint="add")
        b = bb.emit_te(_te_add, a, a, primfunc_name_hint="add")  # same kernel: reused
        c = bb.emit_te(
            lambda t: te.compute(t.shape, lambda i, j: t[i, j] * 3.0, name="M"),
            b,
            primfunc_name_hint="add",  # different kernel, same name: renamed
        )
        bb.emit_func_output(c)
    mod = bb.get()
    rx.well_formed(mod)
    assert sorted(g.name_hint for g, _ in mod) == ["add", "add1", "main"]
    calls = [binding.value for binding in bindings(mod["main"])]
    assert calls[0].args[0] is calls[1].args[0] is mod.get_global_var("add")
    assert calls[2].args[0] is mod.get_global_var("add1")
    assert "add1" in mod and "global_symbol" not in mod["add1"].attrs


def test_emit_te_passes_unbound_symbolic_vars_as_tir_vars() -> None:
    n, m = SymVar("n"), SymVar("m")
    x = rx.Var("x", tensor([n]))
    s = rx.Var("s", tensor([m]))
    bb = BlockBuilder()
    with bb.function("main", [x, s]):
        # The output's extent m comes from a tensor the kernel does not receive.
        out = bb.emit_te(
            lambda t: te.compute((m,), lambda i: t[i] * 2.0, name="P"),
            x,
            primfunc_name_hint="prefix",
        )
        bb.emit_func_output(out)
    mod = bb.get()
    rx.well_formed(mod)
    call = bindings(mod["main"])[0].value
    assert len(call.args) == 3 and list(call.args[2].values) == [m]
    assert out.struct_info == tensor([m])
    a = np.arange(8, dtype="float32")
    p = np.zeros(3, "float32")
    tir.run_prim_func(mod["prefix"], a, p, 3)
    np.testing.assert_array_equal(p, a[:3] * 2)


def test_emit_te_rejects_unknown_shape_and_bad_results() -> None:
    x = rx.Var("x", rx.TensorStructInfo(dtype="float32", ndim=2))
    y = rx.Var("y", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with pytest.raises(BlockBuilderError, match="unknown shape or dtype"):
            bb.emit_te(_te_row_sum, x)
        with pytest.raises(BlockBuilderError, match="must return a te.Tensor"):
            bb.emit_te(lambda t: 3, y)
        with pytest.raises(BlockBuilderError, match="not a tensor"):
            bb.emit_te(lambda t: t, rx.StringImm("s"))
        bb.emit_func_output(y)


# ---- the module: add_func and calls between functions ---------------------------------------
def test_add_func_gives_unique_names() -> None:
    x = rx.Var("x", tensor([2]))
    func = rx.Function([x], rx.SeqExpr([], x), attrs={"global_symbol": "f"})
    bb = BlockBuilder()
    first = bb.add_func(func, "f")
    second = bb.add_func(func, "f")
    assert (first.name_hint, second.name_hint) == ("f", "f1")
    mod = bb.get()
    assert mod["f1"].attrs["global_symbol"] == "f1"
    rx.well_formed(mod)
    with pytest.raises(BlockBuilderError, match="expected a relax Function or tir PrimFunc"):
        bb.add_func("not a function", "g")


def test_builder_on_existing_module_does_not_change_it() -> None:
    x = rx.Var("x", tensor([2]))
    original = rx.IRModule({"f": rx.Function([x], rx.SeqExpr([], x))})
    bb = BlockBuilder(original)
    y = rx.Var("y", tensor([2]))
    with bb.function("main", [y]):
        bb.emit_func_output(y)
    assert "main" in bb.get() and "f" in bb.get()
    assert "main" not in original


def test_calls_between_functions_derive_symbolic_returns() -> None:
    n = SymVar("n")
    p = rx.Var("p", tensor([n, 4]))
    bb = BlockBuilder()
    with bb.function("double", [p]):
        helper_gvar = bb.emit_func_output(bb.emit(op.add(p, p)))
    x = rx.Var("x", tensor([3, 4]))
    m = SymVar("m")
    z = rx.Var("z", tensor([m, 4]))
    with bb.function("main", [x, z]):
        with bb.dataflow():
            a = bb.emit(rx.Call(helper_gvar, [x]))
            b = bb.emit_output(rx.Call(helper_gvar, [op.add(z, z)]))
        bb.emit_func_output(rx.Tuple([b, x]))
    mod = bb.get()
    rx.well_formed(mod)
    assert a.struct_info == tensor([3, 4])
    assert b.struct_info == tensor([m, 4])


def test_call_results_that_cannot_be_named_are_erased_to_ndim() -> None:
    n = SymVar("n")
    k = SymVar("k")
    p = rx.Var("p", rx.TensorStructInfo(dtype="float32", ndim=1))
    bb = BlockBuilder()
    with bb.function("f", [p]):
        cast = bb.match_cast(p, tensor([k]))
        f_gvar = bb.emit_func_output(cast)
    x = rx.Var("x", tensor([n]))
    with bb.function("main", [x]):
        out = bb.emit(rx.Call(f_gvar, [x]))
        bb.emit_func_output(out)
    assert out.struct_info == rx.TensorStructInfo(dtype="float32", ndim=1)
    rx.well_formed(bb.get())


def test_calls_of_packed_and_custom_ops() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        packed = bb.emit(op.call_pure_packed("my.func", x, sinfo_args=tensor([2])))
        declared = bb.emit(rx.Call(rx.Op.get("test.custom_op"), [x], sinfo_args=[tensor([5])]))
        with pytest.raises(BlockBuilderError, match="'test.custom_op': it has no inference"):
            bb.emit(rx.Call(rx.Op.get("test.custom_op"), [x]))
        with pytest.raises(OpError):
            bb.emit(op.add(x, rx.Var("q", tensor([3]))))
        bb.emit_func_output(rx.Tuple([packed, declared]))
    assert packed.struct_info == tensor([2]) and declared.struct_info == tensor([5])
    rx.well_formed(bb.get())


def test_call_of_gvar_without_signature_needs_sinfo_args() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(BlockBuilderError, match="cannot infer the struct info of a call"):
            bb.emit(rx.Call(rx.GlobalVar("later"), [x]))
        out = bb.emit(rx.Call(rx.GlobalVar("later2"), [x], sinfo_args=[tensor([2])]))
        bb.emit_func_output(x)
    assert out.struct_info == tensor([2])


def test_if_branches_are_normalized() -> None:
    c = rx.Var("c", rx.TensorStructInfo([], "bool"))
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [c, x]):
        out = bb.emit(rx.If(c, op.add(x, x), op.exp(op.add(x, x))))
        bb.emit_func_output(out)
    mod = bb.get()
    rx.well_formed(mod)
    node = bindings(mod["main"])[0].value
    assert isinstance(node.true_branch, rx.SeqExpr) and isinstance(node.false_branch, rx.SeqExpr)
    assert len(node.false_branch.blocks[0].bindings) == 2
    assert out.struct_info == tensor([2])


# ---- errors ---------------------------------------------------------------------------------
def test_emit_outside_a_function() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    for call in (
        lambda: bb.emit(op.add(x, x)),
        lambda: bb.match_cast(x, tensor([2])),
        lambda: bb.emit_func_output(x),
        lambda: bb.emit_te(_te_row_sum, x),
    ):
        with pytest.raises(BlockBuilderError, match="called outside a function"):
            call()
    with (
        pytest.raises(BlockBuilderError, match="BlockBuilder.dataflow: called outside"),
        bb.dataflow(),
    ):
        pass


def test_emit_output_outside_dataflow() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(BlockBuilderError, match="emit_output: called outside a dataflow"):
            bb.emit_output(x)
        bb.emit_func_output(x)


def test_nested_function_and_dataflow_are_errors() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with (
            pytest.raises(BlockBuilderError, match="function 'main' is still being built"),
            bb.function("inner", [x]),
        ):
            pass
        with bb.dataflow():
            with (
                pytest.raises(BlockBuilderError, match="dataflow blocks do not nest"),
                bb.dataflow(),
            ):
                pass
            with pytest.raises(BlockBuilderError, match="inside a dataflow block"):
                bb.emit_func_output(x)
            out = bb.emit_output(x)
        bb.emit_func_output(out)
    rx.well_formed(bb.get())


def test_emit_func_output_twice_and_missing() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x)
        with pytest.raises(BlockBuilderError, match="emit_func_output: called outside"):
            bb.emit_func_output(x)
    with (
        pytest.raises(BlockBuilderError, match="ended without emit_func_output"),
        bb.function("g", [x]),
    ):
        bb.emit(op.add(x, x))
    # The failed function left nothing behind and the builder is usable again.
    assert "g" not in bb.get()
    with (
        pytest.raises(BlockBuilderError, match="already has a function of that name"),
        bb.function("main", [x]),
    ):
        pass


def test_get_with_an_open_function() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with pytest.raises(BlockBuilderError, match="function 'main' is still being built"):
            bb.get()
        bb.emit_func_output(x)
    assert len(bb.get()) == 1


def test_returning_a_dataflow_var_is_an_error() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with (
        pytest.raises(BlockBuilderError, match="returns dataflow variable 'lv'"),
        bb.function("main", [x]),
    ):
        with bb.dataflow():
            lv = bb.emit(op.add(x, x))
        bb.emit_func_output(lv)


def test_bad_arguments() -> None:
    x = rx.Var("x", tensor([2]))
    with pytest.raises(BlockBuilderError, match="mod must be an IRModule"):
        BlockBuilder({})  # type: ignore[arg-type]
    bb = BlockBuilder()
    with (
        pytest.raises(BlockBuilderError, match="parameter 0 \\('p'\\) needs struct info"),
        bb.function("f", [rx.Var("p")]),
    ):
        pass
    with (
        pytest.raises(BlockBuilderError, match="parameter 0 must be a plain relax Var"),
        bb.function("f", [rx.DataflowVar("d", tensor([2]))]),
    ):
        pass
    with pytest.raises(BlockBuilderError, match="has no params"), bb.function("f"):
        bb.emit_func_output(x)
    with bb.function("f", [x]):
        with pytest.raises(BlockBuilderError, match="emit: expected a Relax expression"):
            bb.emit(3)  # type: ignore[arg-type]
        with pytest.raises(BlockBuilderError, match="struct_info must be a StructInfo"):
            bb.match_cast(x, "R.Tensor")  # type: ignore[arg-type]
        with pytest.raises(BlockBuilderError, match="got its params already"):
            bb.emit_func_output(x, params=[x])
        bb.emit_func_output(x)
