"""structural_equal / assert_structural_equal / structural_hash over every IR node family,
with and without mapping free variables."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMValueError
from relaxvm.ir import (
    Cast,
    FloatImm,
    IntImm,
    PrimExpr,
    Select,
    SizeVar,
    StructuralEqualError,
    Var,
    assert_structural_equal,
    structural_equal,
    structural_hash,
    tir,
)
from relaxvm.ir import relax as rx
from relaxvm.ir.tir import ForKind


def test_same_tree_is_equal_and_hashes_equal() -> None:
    n = Var("n")
    a, b = n * 4 + 1, n * 4 + 1
    assert a is not b
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b) == hash(a)


def test_different_structure_is_not_equal() -> None:
    n = Var("n")
    assert not structural_equal(n * 4, 4 * n)  # equal values, different trees
    assert not structural_equal(n + 1, n + 2)
    assert not structural_equal(IntImm("int32", 1), IntImm("int64", 1))
    assert structural_equal(3, IntImm(3))  # numbers are wrapped first


def test_free_vars_compare_by_identity_unless_mapped() -> None:
    n1, n2 = Var("n"), Var("n")
    assert not structural_equal(n1 + 1, n2 + 1)
    assert structural_equal(n1 + 1, n2 + 1, map_free_vars=True)
    assert structural_hash(n1 + 1, map_free_vars=True) == structural_hash(
        n2 + 1, map_free_vars=True
    )


def test_mapping_must_be_consistent_and_one_to_one() -> None:
    a, b, x, y = Var("a"), Var("b"), Var("x"), Var("y")
    assert structural_equal(a * b + a, x * y + x, map_free_vars=True)
    assert not structural_equal(a * b + a, x * y + y, map_free_vars=True)  # a -> x, then a -> y
    assert not structural_equal(a + b, x + x, map_free_vars=True)  # a, b both -> x
    assert not structural_equal(a + a, x + y, map_free_vars=True)
    assert structural_equal(a + b, b + a, map_free_vars=True)  # a <-> b is a renaming


def test_mapping_respects_kind_and_type() -> None:
    assert not structural_equal(Var("n") + 1, SizeVar("n") + 1, map_free_vars=True)
    assert not structural_equal(Var("n", "int32"), Var("n", "int64"), map_free_vars=True)


def test_mapped_hash_depends_on_order_of_appearance_not_identity() -> None:
    a, b, x, y = Var("a"), Var("b"), Var("x"), Var("y")
    assert structural_hash(a - b, map_free_vars=True) == structural_hash(x - y, map_free_vars=True)
    assert structural_hash(a - a, map_free_vars=True) != structural_hash(x - y, map_free_vars=True)
    assert structural_hash(a - b) != structural_hash(x - y)


# ---- every node family --------------------------------------------------------------------
# Each builder makes a fresh node (new variables, new objects) for a variant: variant 0 twice
# gives two equal, non-identical nodes; variant 1 differs from variant 0 in one place.
N = Var("n")  # one shared free variable, so map_free_vars=False comparisons can succeed


def _prim(v: int) -> PrimExpr:
    return N * 4 + (1 if v == 0 else 2)


def _cast_select(v: int) -> PrimExpr:
    return Select(N > 0, Cast("float32", N), FloatImm("float32", 0.5 * (v + 1)))


def _intrinsic(v: int) -> PrimExpr:
    x = Cast("float32", N)
    return tir.exp(x) if v == 0 else tir.log(x)


def _func(v: int, loop: str = "i") -> tir.PrimFunc:
    """B[i] = A[i] + 1 (variant 1: + 2), fresh buffers and loop variable."""
    a, b = tir.Buffer("A", (N,), "float32"), tir.Buffer("B", (N,), "float32")
    i = Var(loop)
    body = tir.For(i, 0, N, ForKind.SERIAL, tir.BufferStore(b, a[i] + (1.0 + v), [i]))
    return tir.PrimFunc([a, b], body, attrs={"global_symbol": "f"})


def _stmts(v: int) -> tir.PrimFunc:
    """Every statement kind: let, allocate, if/else, evaluate, seq, nested loops."""
    a = tir.Buffer("A", (8,), "int64")
    scratch = tir.Buffer("S", (8,), "int64", scope="local")
    i, j, t = Var("i"), Var("j"), Var("t")
    store = tir.IfThenElse(
        i < 4, tir.BufferStore(scratch, t, [i]), tir.BufferStore(scratch, t + v, [i])
    )
    body = tir.seq(
        tir.For(i, 0, 8, ForKind.SERIAL, tir.LetStmt(t, i * 2, store)),
        tir.For(j, 0, 8, ForKind.PARALLEL, tir.BufferStore(a, scratch[j], [j])),
        tir.Evaluate(IntImm("int32", 0)),
    )
    return tir.PrimFunc([a], tir.Allocate(scratch, body))


def _sinfo(v: int) -> rx.StructInfo:
    m = Var("m")
    return rx.FuncStructInfo(
        [
            rx.TensorStructInfo([m, 4], "float32"),
            rx.TupleStructInfo([rx.ShapeStructInfo([m]), rx.PrimStructInfo("int64", m + 1)]),
            rx.ObjectStructInfo(),
        ],
        rx.TensorStructInfo([m, 4], "float32" if v == 0 else "float16"),
    )


def _relax_func(v: int) -> rx.Function:
    """Every Relax expression kind in one function: def f(x: R.Tensor((m, 4)), c: bool)."""
    m = Var("m")
    x = rx.Var("x", rx.TensorStructInfo([m, 4], "float32"))
    c = rx.Var("c", rx.TensorStructInfo([], "bool"))
    add, shape_of = rx.Op.get("relax.add"), rx.Op.get("relax.shape_of")
    y, z = rx.DataflowVar("y"), rx.Var("z")
    k = rx.Var("k", rx.TensorStructInfo([Var("k0"), 4], "float32"))
    first = rx.DataflowBlock(
        [
            rx.VarBinding(y, rx.Call(add, [x, rx.const(np.arange(4, dtype="float32"))])),
            rx.MatchCast(k, y, rx.TensorStructInfo([Var("k0"), 4], "float32")),
            rx.VarBinding(z, rx.Call(shape_of, [k])),
        ]
    )
    extern = rx.Call(
        rx.ExternFunc("vm.builtin.debug"),
        [
            rx.Tuple([x, rx.ShapeExpr([m, 4]), rx.PrimValue(m * 2)]),
            rx.StringImm("tag" if v == 0 else "other"),
            rx.DataTypeImm("float32"),
        ],
        attrs={"axis": [0, 1]},
        sinfo_args=[rx.ObjectStructInfo()],
    )
    w, r = rx.Var("w"), rx.Var("r")
    branch = rx.If(
        c,
        rx.SeqExpr([rx.BindingBlock([rx.VarBinding(w, extern)])], x),
        rx.SeqExpr([], rx.TupleGetItem(rx.Tuple([x, x]), 1)),
    )
    second = rx.BindingBlock([rx.VarBinding(r, branch)])
    return rx.Function([x, c], rx.SeqExpr([first, second], r), attrs={"global_symbol": "f"})


def _module(v: int) -> rx.IRModule:
    func = _relax_func(0)
    caller_x = rx.Var("x", rx.TensorStructInfo([4, 4], "float32"))
    out = rx.Var("out")
    call = rx.Call(rx.GlobalVar("kernel" if v == 0 else "f"), [caller_x])
    main = rx.Function([caller_x], rx.SeqExpr([rx.BindingBlock([rx.VarBinding(out, call)])], out))
    return rx.IRModule({"main": main, "f": func, "kernel": _func(0)}, attrs={"opt": 2})


def _containers(v: int) -> dict[str, object]:
    return {"shape": [N, 4], "name": "x", "nested": {"k": (1, 2.0 if v == 0 else 2)}}


FAMILIES = {
    "prim_expr": _prim,
    "cast_select": _cast_select,
    "intrinsic": _intrinsic,
    "buffer_load": lambda v: tir.Buffer("A", (N,), "float32")[N - 1 - v],
    "prim_func": _func,
    "statements": _stmts,
    "struct_info": _sinfo,
    "relax_function": _relax_func,
    "ir_module": _module,
    "containers": _containers,
    "constant": lambda v: rx.const(np.array([1.0, float("nan"), v], dtype="float32")),
    "global_var": lambda v: rx.GlobalVar("main" if v == 0 else "helper"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("map_free_vars", [False, True])
def test_every_family_equal_to_a_fresh_copy_and_not_to_a_variant(
    family: str, map_free_vars: bool
) -> None:
    build = FAMILIES[family]
    first, second, variant = build(0), build(0), build(1)
    assert first is not second
    # A bare buffer_load compares as the expression's own == (buffers by identity) unless
    # mapped; inside a statement its first use would define the buffer.
    same = map_free_vars or family != "buffer_load"
    assert structural_equal(first, second, map_free_vars) is same
    assert not structural_equal(first, variant, map_free_vars)
    if same:
        assert structural_hash(first, map_free_vars) == structural_hash(second, map_free_vars)
        assert_structural_equal(first, second, map_free_vars)
    assert structural_hash(first, map_free_vars) != structural_hash(variant, map_free_vars)


def test_equal_implies_equal_hash_across_all_pairs() -> None:
    nodes = [build(v) for build in FAMILIES.values() for v in (0, 0, 1)]
    for map_free_vars in (False, True):
        hashes = [structural_hash(node, map_free_vars) for node in nodes]
        for i, left in enumerate(nodes):
            for j, right in enumerate(nodes):
                if structural_equal(left, right, map_free_vars):
                    assert hashes[i] == hashes[j], (i, j)


# ---- map_free_vars on Relax and TIR -------------------------------------------------------
def test_relax_free_vars_pair_only_when_mapped() -> None:
    sinfo = rx.TensorStructInfo([4], "float32")
    a, b, x, y = (rx.Var(name, sinfo) for name in "abxy")
    add = rx.Op.get("relax.add")
    assert not structural_equal(rx.Call(add, [a, b]), rx.Call(add, [x, y]))
    assert structural_equal(rx.Call(add, [a, b]), rx.Call(add, [x, y]), map_free_vars=True)
    assert not structural_equal(rx.Call(add, [a, b]), rx.Call(add, [x, x]), map_free_vars=True)
    assert not structural_equal(rx.Call(add, [a, a]), rx.Call(add, [x, y]), map_free_vars=True)
    # A Var and a DataflowVar never pair, nor variables with different annotations.
    assert not structural_equal(a, rx.DataflowVar("a", sinfo), map_free_vars=True)
    assert not structural_equal(a, rx.Var("a", rx.TensorStructInfo([5], "float32")), True)


def test_tir_free_vars_pair_only_when_mapped_buffers_by_first_use() -> None:
    first, second = _func(0, "i"), _func(0, "j")
    assert structural_equal(first, second)  # parameters and loop variables are definitions
    # The body alone: its buffers are defined where first used, as TVM compares buffers.
    assert structural_equal(first.body, second.body)
    assert structural_equal(first.body, second.body, map_free_vars=True)
    m = Var("m")
    assert not structural_equal(tir.Evaluate(N + 1), tir.Evaluate(m + 1))
    assert structural_equal(tir.Evaluate(N + 1), tir.Evaluate(m + 1), map_free_vars=True)


def test_symbolic_vars_defined_by_annotations_need_no_mapping() -> None:
    # Each function has its own `n`: defined by the parameter annotation, so no mapping needed.
    assert structural_equal(_relax_func(0), _relax_func(0))
    k1, k2 = Var("k"), Var("k")
    assert not structural_equal(
        rx.TensorStructInfo([k1], dtype=None), rx.TensorStructInfo([k2], dtype=None)
    )
    assert structural_equal(
        rx.TensorStructInfo([k1], dtype=None), rx.TensorStructInfo([k2], dtype=None), True
    )


def test_sibling_loops_may_reuse_a_loop_variable() -> None:
    def loops(shared: bool) -> tir.Stmt:
        a = tir.Buffer("A", (4,), "int64")
        i, j = Var("i"), Var("j")
        second = i if shared else j
        return tir.seq(
            tir.For(i, 0, 4, ForKind.SERIAL, tir.BufferStore(a, i, [i])),
            tir.For(second, 0, 4, ForKind.SERIAL, tir.BufferStore(a, second, [second])),
        )

    assert structural_equal(loops(True), loops(False), map_free_vars=True)
    assert structural_hash(loops(True), True) == structural_hash(loops(False), True)


def test_module_functions_are_compared_in_their_own_scope() -> None:
    # emit_te shares the Relax function's `n` with the kernel: each must still define it.
    def module(n: Var) -> rx.IRModule:
        a = tir.Buffer("A", (n,), "float32")
        body = tir.For(Var("i"), 0, n, ForKind.SERIAL, tir.Evaluate(IntImm("int32", 0)))
        x = rx.Var("x", rx.TensorStructInfo([n], "float32"))
        main = rx.Function([x], rx.SeqExpr([], x))
        return rx.IRModule({"main": main, "k": tir.PrimFunc([a], body)})

    shared = Var("n")
    assert structural_equal(module(shared), module(Var("n")))
    assert structural_hash(module(shared)) == structural_hash(module(Var("n")))


# ---- leaves and attributes ----------------------------------------------------------------
def test_attribute_values_are_compared_by_type_and_value() -> None:
    assert structural_equal({"a": [1, 2]}, {"a": (1, 2)})  # both are arrays, as in TVM
    assert not structural_equal({"a": 1}, {"a": 1.0})
    assert not structural_equal({"a": 1}, {"a": True})
    assert structural_equal({"a": float("nan")}, {"a": float("nan")})
    assert structural_hash({"a": float("nan")}) == structural_hash({"a": float("nan")})
    assert structural_equal({"s": {1, 2}}, {"s": {2, 1}})  # unhashable leaves: by ==
    assert structural_hash({"s": {1, 2}}) == structural_hash({"s": {2, 1}})
    op = rx.Op.get("relax.add")
    x = rx.Var("x", rx.TensorStructInfo([4], "float32"))
    assert structural_equal(rx.Call(op, [x]), rx.Call(op, [x], attrs={}))  # None is no attrs


# ---- the assertion names where the two sides differ ---------------------------------------
def _two_bindings(second_arg: str) -> rx.IRModule:
    sinfo = rx.TensorStructInfo([4], "float32")
    x, y = rx.Var("x", sinfo), rx.Var("y", sinfo)
    lv0, lv1 = rx.Var("lv0"), rx.Var("lv1")
    args = {"lv0": [lv0, x], "y": [y, x]}[second_arg]
    block = rx.BindingBlock(
        [
            rx.VarBinding(lv0, rx.Call(rx.Op.get("relax.add"), [x, y])),
            rx.VarBinding(lv1, rx.Call(rx.Op.get("relax.multiply"), args)),
        ]
    )
    return rx.IRModule({"main": rx.Function([x, y], rx.SeqExpr([block], lv1))})


def test_assert_structural_equal_reports_the_path_and_both_values() -> None:
    with pytest.raises(StructuralEqualError) as info:
        assert_structural_equal(_two_bindings("lv0"), _two_bindings("y"))
    error = info.value
    path = '<root>.functions["main"].body.blocks[0].bindings[1].value.args[0]'
    assert error.path == path
    assert isinstance(error, ValueError) and isinstance(error, VMValueError)
    message = str(error)
    assert path in message and "left:  lv0" in message and "right: y" in message
    assert error.lhs.name_hint == "lv0" and error.rhs.name_hint == "y"


@pytest.mark.parametrize(
    ("left", "right", "path", "reason"),
    [
        (_func(0), _func(1), "<root>.body.body.value.b", "different value (1.0 vs 2.0)"),
        (_sinfo(0), _sinfo(1), "<root>.ret", "different dtype (float32 vs float16)"),
        (
            _module(0),
            _module(1),
            '<root>.functions["main"].body.blocks[0].bindings[0].value.op',
            "different name_hint ('kernel' vs 'f')",
        ),
        ([1, 2], [1, 2, 3], "<root>", "different lengths (2 vs 3)"),
        ({"a": 1}, {"b": 1}, "<root>", "different keys"),
        (N + 1, Var("m") + 1, "<root>.a", "different free variables"),
        (N + 1, N - 1, "<root>", "different node types (Add vs Sub)"),
    ],
)
def test_mismatch_paths(left: object, right: object, path: str, reason: str) -> None:
    with pytest.raises(StructuralEqualError) as info:
        assert_structural_equal(left, right)
    assert info.value.path == path, str(info.value)
    assert reason in info.value.reason


# ---- one implementation -------------------------------------------------------------------
def test_relax_and_tir_names_are_aliases_of_the_one_implementation() -> None:
    from relaxvm.ir import structural
    from relaxvm.ir.relax import structural as relax_structural
    from relaxvm.ir.tir import stmt_functor

    for module in (rx, relax_structural, tir):
        assert module.structural_equal is structural.structural_equal
        assert module.structural_hash is structural.structural_hash
        assert module.assert_structural_equal is structural.assert_structural_equal
    assert stmt_functor.structural_equal is structural.structural_equal
    assert rx.StructuralEqualError is StructuralEqualError
