"""free_vars, substitute, evaluate and post_order_visit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import (
    Add,
    Cast,
    FloorDiv,
    IntImm,
    PrimExpr,
    Select,
    SizeVar,
    Var,
    evaluate,
    floordiv,
    floormod,
    free_vars,
    max_expr,
    min_expr,
    post_order_visit,
    select,
    substitute,
    truncdiv,
    truncmod,
)


def test_free_vars_in_first_appearance_order() -> None:
    n, m, k = Var("n"), Var("m"), Var("k")
    expr = min_expr(m * n, k) + n * 2 + m
    assert free_vars(expr) == [m, n, k]
    assert free_vars(IntImm(3)) == []
    assert free_vars(4) == []


def test_post_order_visit_sees_children_first_and_shared_nodes_once() -> None:
    n = Var("n")
    shared = n + 1
    expr = shared * shared
    seen: list[PrimExpr] = []
    post_order_visit(expr, seen.append)
    assert [str(node) for node in seen] == ["n", "1", "n + 1", "(n + 1) * (n + 1)"]


def test_substitute_replaces_without_simplifying() -> None:
    n, m = Var("n"), Var("m")
    expr = n * 4 + m
    replaced = substitute(expr, {n: m + 1})
    assert str(replaced) == "(m + 1) * 4 + m"
    assert str(substitute(expr, {n: 3})) == "3 * 4 + m"  # no folding
    assert substitute(expr, {}) is expr
    assert str(substitute(expr, lambda var: IntImm(2) if var is m else None)) == "n * 4 + 2"


def test_substitute_rejects_bad_keys_values_and_types() -> None:
    n = Var("n")
    with pytest.raises(VMTypeError, match="keys must be Vars"):
        substitute(n + 1, {"n": 3})  # type: ignore[dict-item]
    with pytest.raises(VMTypeError, match="variable 'n' has type int64 but its replacement"):
        substitute(n + 1, {n: Var("m", "int32")})
    with pytest.raises(VMTypeError, match="must be a PrimExpr or a number, got str"):
        substitute(n + 1, {n: "x"})  # type: ignore[dict-item]


def test_evaluate_follows_floor_semantics_like_python() -> None:
    n, m = Var("n"), Var("m")
    values = range(-7, 8)
    for a, b in itertools.product(values, [v for v in values if v != 0]):
        point = {n: a, m: b}
        assert evaluate(floordiv(n, m), point) == a // b
        assert evaluate(floormod(n, m), point) == a % b
        assert evaluate(truncdiv(n, m), point) == int(np.trunc(a / b))
        assert evaluate(truncmod(n, m), point) == int(np.fmod(a, b))


def test_evaluate_returns_python_types_by_dtype() -> None:
    n = Var("n")
    assert evaluate(n * 4 + 1, {n: 3}) == 13
    assert type(evaluate(n * 4 + 1, {n: 3})) is int
    assert evaluate(n < 4, {n: 3}) is True
    assert evaluate((n < 4) & (n > 3), {n: 3}) is False
    x = Var("x", "float32")
    assert evaluate(x / 2.0 + 1, {x: 3}) == 2.5
    assert evaluate(Cast("int8", n), {n: 300}) == 44
    assert evaluate(Cast("bool", n), {n: 2}) is True
    assert evaluate(max_expr(n, 7) - min_expr(n, 7), {n: np.int64(3)}) == 4
    assert evaluate(IntImm(5)) == 5


def test_select_and_logic_evaluate_only_what_they_need() -> None:
    n = Var("n")
    guarded = select(n.not_equal(0), FloorDiv(IntImm(10), n), IntImm(-1))
    assert evaluate(guarded, {n: 0}) == -1
    assert evaluate(guarded, {n: 5}) == 2
    assert isinstance(guarded, Select)


def test_evaluate_reports_unbound_variables() -> None:
    n, m = Var("n"), Var("m")
    with pytest.raises(VMValueError, match=r"variable 'm' \(int64\) has no value"):
        evaluate(n + m, {n: 1})


def test_evaluate_reports_division_by_zero_with_the_subexpression() -> None:
    n, m = Var("n"), Var("m")
    with pytest.raises(VMValueError, match=r"division by zero in `n // \(m - 3\)`"):
        evaluate(FloorDiv(n, m - 3), {n: 1, m: 3})
    with pytest.raises(VMValueError, match="division by zero"):
        evaluate(truncmod(n, m), {n: 1, m: 0})


def test_evaluate_checks_values() -> None:
    n = Var("n")
    small = Var("b", "int8")
    with pytest.raises(VMValueError, match="value 300 of variable 'b' overflows int8"):
        evaluate(small + 1, {small: 300})
    with pytest.raises(VMTypeError, match=r"variable 'n' \(int64\) needs an int, got 1.5"):
        evaluate(n + 1, {n: 1.5})
    with pytest.raises(VMTypeError, match="use substitute"):
        evaluate(n + 1, {n: Var("m")})
    with pytest.raises(VMTypeError, match="binding keys must be Vars"):
        evaluate(n + 1, {"n": 1})  # type: ignore[dict-item]


def test_evaluate_handles_long_sums_without_recursion_errors() -> None:
    s = SizeVar("s")
    expr: PrimExpr = s
    for index in range(3000):
        expr = expr + index
    assert isinstance(expr, Add)
    assert evaluate(expr, {s: 1}) == 1 + sum(range(3000))
    assert len(str(expr)) > 3000
