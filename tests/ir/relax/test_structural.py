"""Structural equality and hashing of Relax IR: definitions pair up, free vars by identity."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMValueError
from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    IRModule,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    assert_structural_equal,
    const,
    structural_equal,
    structural_hash,
)


def build_function(
    op: str = "relax.add",
    dtype: str = "float32",
    swap: bool = False,
    constant: float = 1.0,
    attrs: dict | None = None,
) -> Function:
    """def f(x: R.Tensor((n, 4)), y: R.Tensor((n, 4))): lv = op(x, y); gv = op(lv, c); return gv

    Every call builds fresh Var and TIR Var objects, so two calls are alpha-equivalent.
    """
    n = TirVar("n")
    sinfo = TensorStructInfo([n, 4], dtype)
    x, y = Var("x", sinfo), Var("y", sinfo)
    lv = DataflowVar("lv", sinfo)
    gv = Var("gv", sinfo)
    args = [y, x] if swap else [x, y]
    block = DataflowBlock(
        [
            VarBinding(lv, Call(Op.get(op), args, attrs=attrs)),
            VarBinding(gv, Call(Op.get(op), [lv, const(np.full(4, constant, dtype))])),
        ]
    )
    return Function([x, y], SeqExpr([block], gv), attrs={"global_symbol": "main"})


def assert_equal_and_same_hash(a: object, b: object, map_free_vars: bool = False) -> None:
    assert structural_equal(a, b, map_free_vars)
    assert structural_hash(a, map_free_vars) == structural_hash(b, map_free_vars)


def test_alpha_equivalent_functions_are_equal_and_hash_equal() -> None:
    first, second = build_function(), build_function()
    assert first.params[0] is not second.params[0]
    assert first.params[0].struct_info != second.params[0].struct_info  # different `n`
    assert_equal_and_same_hash(first, second)
    assert_structural_equal(first, second)
    assert_equal_and_same_hash(build_function(attrs={"k": 1}), build_function(attrs={"k": 1}))


@pytest.mark.parametrize(
    "changes",
    [
        {"op": "relax.multiply"},
        {"dtype": "float16"},
        {"swap": True},
        {"constant": 2.0},
        {"attrs": {"k": 1}},
    ],
    ids=["op", "dtype", "argument-order", "constant", "attrs"],
)
def test_different_functions_are_not_equal(changes: dict) -> None:
    base, other = build_function(), build_function(**changes)
    assert not structural_equal(base, other)
    assert not structural_equal(other, base)
    # Hashes may collide in principle; for these small differences they must not.
    assert structural_hash(base) != structural_hash(other)


def test_symbolic_vars_must_map_consistently() -> None:
    n, m = TirVar("n"), TirVar("m")
    x1 = Var("x", TensorStructInfo([n, n], "float32"))
    x2 = Var("x", TensorStructInfo([n, m], "float32"))
    f1 = Function([x1], SeqExpr([], x1))
    f2 = Function([x2], SeqExpr([], x2))
    assert not structural_equal(f1, f2)  # (n, n) is not (n, m)
    k = TirVar("k")
    x3 = Var("x", TensorStructInfo([k, k], "float32"))
    assert_equal_and_same_hash(f1, Function([x3], SeqExpr([], x3)))


def test_uses_must_follow_definitions() -> None:
    def pick(first: bool) -> Function:
        sinfo = TensorStructInfo([2], "float32")
        x, y = Var("x", sinfo), Var("y", sinfo)
        return Function([x, y], SeqExpr([], x if first else y))

    assert_equal_and_same_hash(pick(True), pick(True))
    assert not structural_equal(pick(True), pick(False))


def test_free_vars_compare_by_identity_unless_mapped() -> None:
    sinfo = TensorStructInfo([2], "float32")
    a, b = Var("a", sinfo), Var("b", sinfo)
    add = Op.get("relax.add")
    assert_equal_and_same_hash(Call(add, [a, a]), Call(add, [a, a]))
    assert not structural_equal(Call(add, [a, a]), Call(add, [b, b]))
    assert_equal_and_same_hash(Call(add, [a, a]), Call(add, [b, b]), map_free_vars=True)
    assert not structural_equal(Call(add, [a, b]), Call(add, [b, b]), map_free_vars=True)
    n, m = TirVar("n"), TirVar("m")
    assert not structural_equal(ShapeExpr([n]), ShapeExpr([m]))
    assert_equal_and_same_hash(ShapeExpr([n]), ShapeExpr([m]), map_free_vars=True)
    assert not structural_equal(
        TensorStructInfo([n], dtype=None), TensorStructInfo([m], dtype=None)
    )
    assert structural_equal(
        TensorStructInfo([n], dtype=None), TensorStructInfo([m], dtype=None), map_free_vars=True
    )


def test_match_cast_defines_symbolic_vars() -> None:
    def build() -> Function:
        x = Var("x", TensorStructInfo(ndim=1, dtype="float32"))
        m = TirVar("m")
        y = Var("y", TensorStructInfo([m], "float32"))
        z = Var("z", TensorStructInfo([m], "float32"))
        bindings = [
            MatchCast(y, x, TensorStructInfo([m], "float32")),
            VarBinding(z, Call(Op.get("relax.exp"), [y])),
        ]
        return Function([x], SeqExpr([BindingBlock(bindings)], PrimValue(m)))

    assert_equal_and_same_hash(build(), build())


def test_definition_kinds_and_block_kinds_matter() -> None:
    sinfo = TensorStructInfo([2], "float32")

    def build(var_type: type, block_type: type) -> SeqExpr:
        x = Var("x", sinfo)
        v = var_type("v", sinfo)
        return SeqExpr([block_type([VarBinding(v, Call(Op.get("relax.exp"), [x]))])], x)

    assert not structural_equal(build(Var, DataflowBlock), build(DataflowVar, DataflowBlock))
    assert not structural_equal(build(Var, DataflowBlock), build(Var, BindingBlock))


def test_tuples_items_prim_values_and_constants() -> None:
    x = Var("x", TensorStructInfo([2], "float32"))
    assert_equal_and_same_hash(TupleGetItem(Tuple([x, x]), 1), TupleGetItem(Tuple([x, x]), 1))
    assert not structural_equal(TupleGetItem(Tuple([x, x]), 0), TupleGetItem(Tuple([x, x]), 1))
    assert not structural_equal(Tuple([x]), Tuple([x, x]))
    assert_equal_and_same_hash(const([1, 2], "int32"), const([1, 2], "int32"))
    assert not structural_equal(const([1, 2], "int32"), const([1, 2], "int64"))
    assert not structural_equal(const([1, 2], "int32"), const([[1, 2]], "int32"))
    assert not structural_equal(PrimValue(1), PrimValue(2))
    assert structural_equal(TirVar("n") + 1, TirVar("n") + 1, map_free_vars=True)


def test_modules_compare_functions_by_name() -> None:
    def build(callee: str) -> IRModule:
        helper = build_function()
        x = Var("x", TensorStructInfo([4, 4], "float32"))
        out = Var("out", TensorStructInfo([4, 4], "float32"))
        call = Call(GlobalVar(callee), [x, x])
        main = Function([x], SeqExpr([BindingBlock([VarBinding(out, call)])], out))
        return IRModule({"main": main, callee: helper})

    assert_equal_and_same_hash(build("helper"), build("helper"))
    assert not structural_equal(build("helper"), build("other"))
    assert not structural_equal(build("helper"), build("helper").with_attr("opt", 1))


def test_assert_structural_equal_names_the_first_difference() -> None:
    with pytest.raises(VMValueError, match=r"(?s)left:  R.add.*right: R.multiply"):
        assert_structural_equal(build_function(), build_function(op="relax.multiply"))


def test_equality_follows_the_build_recipe_and_hash_agrees() -> None:
    recipes = [
        {"op": op, "dtype": dtype, "swap": swap}
        for op in ("relax.add", "relax.subtract")
        for dtype in ("float32", "float64")
        for swap in (False, True)
    ]
    built = [(recipe, build_function(**recipe)) for recipe in recipes for _ in range(2)]
    for left_recipe, left in built:
        for right_recipe, right in built:
            same = left_recipe == right_recipe
            assert structural_equal(left, right) == same
            if same:
                assert structural_hash(left) == structural_hash(right)
