"""well_formed's normal-form rules (leaf results, If conditions and tuple reads) and its rule
that each function of a module owns its symbolic variables; Normalize repairs what it can."""

from __future__ import annotations

import re

import pytest

from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    BindingBlock,
    BlockBuilder,
    Call,
    Function,
    If,
    IRModule,
    Op,
    SeqExpr,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
    WellFormedError,
    analysis,
    is_well_formed,
    well_formed,
)
from relaxvm.transform import Normalize

ADD = Op.get("relax.add")
SCALAR = TensorStructInfo([], "float32")


def expect_error(mod: IRModule, *fragments: str) -> None:
    with pytest.raises(WellFormedError) as info:
        well_formed(mod, check_struct_info=False)
    for fragment in fragments:
        assert re.search(re.escape(fragment), str(info.value)), str(info.value)
    assert not is_well_formed(mod, check_struct_info=False)
    assert analysis.well_formed(mod, check_struct_info=False) is False
    err = analysis.well_formed_error(mod, check_struct_info=False)
    assert err is not None and str(err) == str(info.value)


def test_seq_expr_result_must_be_a_leaf() -> None:
    x, y = Var("x", SCALAR), Var("y", SCALAR)
    mod = IRModule({"f": Function([x, y], SeqExpr([], Call(ADD, [x, y])))})
    expect_error(mod, "in function 'f'", "result 'R.add(x, y)'", "must be a leaf", "got a Call")
    normalized = Normalize()(mod)
    well_formed(normalized)
    body = normalized["f"].body
    assert isinstance(body.body, Var)
    assert isinstance(body.blocks[-1].bindings[-1].value, Call)


def test_seq_expr_result_tuple_fields_must_be_leaves() -> None:
    x = Var("x", SCALAR)
    mod = IRModule({"f": Function([x], SeqExpr([], Tuple([x, Call(ADD, [x, x])])))})
    expect_error(mod, "must be a leaf expression", "got a Tuple")
    # A tuple of leaves is fine.
    ok = IRModule({"f": Function([x], SeqExpr([], Tuple([x, x])))})
    well_formed(ok, check_struct_info=False)


def test_if_condition_must_be_a_leaf() -> None:
    x = Var("x", SCALAR)
    flag = Var("flag", TupleStructInfo([TensorStructInfo([], "bool")]))
    out = Var("out", SCALAR)
    cond = TupleGetItem(flag, 0)
    branch = SeqExpr([], x)
    mod = IRModule(
        {
            "f": Function(
                [x, flag],
                SeqExpr([BindingBlock([VarBinding(out, If(cond, branch, branch))])], out),
            )
        }
    )
    expect_error(mod, "binding 'out = ", "the condition of an If must be a leaf", "TupleGetItem")
    normalized = Normalize()(mod)
    well_formed(normalized)
    bindings = normalized["f"].body.blocks[0].bindings
    assert isinstance(bindings[0].value, TupleGetItem)
    assert bindings[-1].value.cond is bindings[0].var


def test_tuple_get_item_reads_a_leaf() -> None:
    inner = TupleStructInfo([SCALAR])
    t = Var("t", TupleStructInfo([inner]))
    r = Var("r", SCALAR)
    nested = TupleGetItem(TupleGetItem(t, 0), 0)
    mod = IRModule({"f": Function([t], SeqExpr([BindingBlock([VarBinding(r, nested)])], r))})
    expect_error(mod, "the tuple a TupleGetItem reads must be a leaf", "got a TupleGetItem")
    normalized = Normalize()(mod)
    well_formed(normalized)
    assert len(normalized["f"].body.blocks[0].bindings) == 2


def test_symbolic_variable_shared_by_two_functions() -> None:
    n = TirVar("n", "int64")
    bb = BlockBuilder()
    for name in ("first", "second"):
        x = Var("x", TensorStructInfo([n], "float32"))
        with bb.function(name, [x]):
            bb.emit_func_output(x)
    mod = bb.get()
    # TVM's analysis.well_formed enforces it ...
    assert analysis.well_formed(mod) is False
    err = analysis.well_formed_error(mod)
    assert err is not None
    for fragment in ("in function 'second'", "symbolic variable 'n'", "function 'first'"):
        assert fragment in str(err), str(err)
    with pytest.raises(WellFormedError, match="needs its own symbolic variables"):
        well_formed(mod, symbolic_per_function=True)
    assert not is_well_formed(mod, symbolic_per_function=True)
    # ... relaxvm's own check (build, the parser) does not, and such a module builds.
    well_formed(mod)
    assert is_well_formed(mod)


def test_each_function_with_its_own_symbolic_variable_is_fine() -> None:
    bb = BlockBuilder()
    for name in ("first", "second"):
        x = Var("x", TensorStructInfo([TirVar("n", "int64")], "float32"))
        with bb.function(name, [x]):
            bb.emit_func_output(x)
    assert analysis.well_formed(bb.get())


def test_nested_function_shares_the_outer_symbolic_variable() -> None:
    n = TirVar("n", "int64")
    x = Var("x", TensorStructInfo([n], "float32"))
    p = Var("p", TensorStructInfo([n], "float32"))
    inner = Function([p], SeqExpr([], p))
    local = Var("local", inner.struct_info)
    outer = Function([x], SeqExpr([BindingBlock([VarBinding(local, inner)])], x))
    well_formed(IRModule({"main": outer}))
