"""ToNonDataflow, RemovePurityChecking and AttachGlobalSymbol against hand-built expected IR."""

from __future__ import annotations

import pytest

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.transform import AttachGlobalSymbol, RemovePurityChecking, ToNonDataflow

from ._lower_helpers import Seq, assert_same, function, kernel, module, param, tensor


def _dataflow_main() -> rx.IRModule:
    x = param("x", [2, 3])
    lv0 = rx.DataflowVar("lv0", tensor([2, 3]))
    lv1 = rx.DataflowVar("lv1", tensor([2, 3]))
    gv = rx.Var("gv", tensor([2, 3]))
    block = rx.DataflowBlock(
        [
            rx.VarBinding(lv0, op.add(x, x)),
            rx.MatchCast(lv1, lv0, tensor([2, 3])),
            rx.VarBinding(gv, op.multiply(lv1, x)),
        ]
    )
    return module(main=function([x], [block], gv))


def test_to_non_dataflow_turns_blocks_and_vars_into_plain_ones() -> None:
    after = ToNonDataflow()(_dataflow_main())["main"]
    x = param("x", [2, 3])
    s = Seq()
    lv0 = s.let("lv0", op.add(x, x))
    lv1 = rx.Var("lv1", tensor([2, 3]))
    s.bindings.append(rx.MatchCast(lv1, lv0, tensor([2, 3])))
    gv = s.let("gv", op.multiply(lv1, x))
    assert_same(after, function([x], [s.block()], gv))
    block = after.body.blocks[0]
    assert not block.is_dataflow
    assert not any(isinstance(b.var, rx.DataflowVar) for b in block.bindings)
    # The uses now point at the new plain variables.
    assert block.bindings[1].value is block.bindings[0].var


def test_to_non_dataflow_leaves_plain_functions_alone() -> None:
    mod = ToNonDataflow()(_dataflow_main())
    again = ToNonDataflow()(mod)
    assert again["main"] is mod["main"]


def test_to_non_dataflow_reaches_if_branches_and_nested_functions() -> None:
    x = param("x", [4])
    inner_lv = rx.DataflowVar("lv", tensor([4]))
    inner_out = rx.Var("o", tensor([4]))
    inner = rx.SeqExpr(
        [
            rx.DataflowBlock(
                [rx.VarBinding(inner_lv, op.add(x, x)), rx.VarBinding(inner_out, inner_lv)]
            )
        ],
        inner_out,
    )
    y = param("y", [4])
    local = rx.Function([y], inner, tensor([4]))
    f = rx.Var("f", local.struct_info)
    main = function([x], [rx.BindingBlock([rx.VarBinding(f, local)])], f)
    after = ToNonDataflow()(module(main=main))["main"]
    nested = after.body.blocks[0].bindings[0].value
    assert isinstance(nested, rx.Function)
    assert not nested.body.blocks[0].is_dataflow
    assert not isinstance(nested.body.blocks[0].bindings[0].var, rx.DataflowVar)


def test_remove_purity_checking_unwraps_pure_calls_and_marks_functions() -> None:
    x = param("x", [2, 3])
    s = Seq()
    lv = s.let("lv", op.call_pure_packed("my.func", x, sinfo_args=tensor([2, 3])))
    clo = rx.Var("clo", rx.FuncStructInfo([tensor([2, 3])], tensor([2, 3])))
    s2 = Seq()
    r = s2.let("r", op.invoke_pure_closure(clo, [lv], tensor([2, 3])))
    before = module(main=function([x, clo], [rx.BindingBlock(s.bindings + s2.bindings)], r))
    after = RemovePurityChecking()(before)["main"]

    x2 = param("x", [2, 3])
    clo2 = rx.Var("clo", clo.struct_info)
    e = Seq()
    lv2 = e.let(
        "lv", rx.Call(rx.ExternFunc("my.func"), [x2], None, [tensor([2, 3])]), tensor([2, 3])
    )
    r2 = e.let("r", op.invoke_closure(clo2, [lv2], tensor([2, 3])))
    expected = function([x2, clo2], [e.block()], r2, attrs={"relax.force_pure": True})
    assert_same(after, expected)
    assert after.attrs["relax.force_pure"] is True
    packed = after.body.blocks[0].bindings[0].value
    assert isinstance(packed.op, rx.ExternFunc) and packed.op.global_symbol == "my.func"


def test_remove_purity_checking_skips_impure_functions() -> None:
    x = param("x", [2])
    s = Seq()
    s.let("p", op.print(x, format="{}"), rx.TupleStructInfo([]))
    impure = function([x], [s.block()], x, pure=False)
    after = RemovePurityChecking()(module(main=impure))["main"]
    assert "relax.force_pure" not in after.attrs
    assert after is impure


def test_remove_purity_checking_marks_nested_pure_functions() -> None:
    y = param("y", [2])
    local = rx.Function([y], rx.SeqExpr([], y), tensor([2]))
    x = param("x", [2])
    f = rx.Var("f", local.struct_info)
    main = function([x], [rx.BindingBlock([rx.VarBinding(f, local)])], x)
    after = RemovePurityChecking()(module(main=main))["main"]
    nested = after.body.blocks[0].bindings[0].value
    assert nested.attrs["relax.force_pure"] is True


def test_attach_global_symbol_names_relax_functions_and_primfuncs() -> None:
    x = param("x", [2])
    private = function([x], [], x)
    public = function([x], [], x, attrs={"global_symbol": "old_name"})
    mod = module(helper=private, main=public, add_one=kernel())
    after = AttachGlobalSymbol()(mod)
    assert after["helper"].attrs["global_symbol"] == "helper"
    assert after["main"].attrs["global_symbol"] == "main"
    assert after["add_one"].attrs["global_symbol"] == "add_one"
    prefixed = AttachGlobalSymbol()(mod.with_attr("system_lib_prefix", "lib_"))
    assert prefixed["add_one"].attrs["global_symbol"] == "lib_add_one"
    assert prefixed["main"].attrs["global_symbol"] == "main"
    # Idempotent: already-correct functions stay the same objects.
    again = AttachGlobalSymbol()(after)
    assert again["main"] is after["main"] and again["add_one"] is after["add_one"]


def test_passes_reject_non_modules() -> None:
    with pytest.raises(TypeError, match="expected an IRModule"):
        ToNonDataflow()(param("x", [2]))  # type: ignore[arg-type]
