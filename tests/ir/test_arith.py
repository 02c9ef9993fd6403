"""The Analyzer: canonical simplification, proofs, bounds and facts."""

from __future__ import annotations

import math

import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import (
    Analyzer,
    Cast,
    ConstIntBound,
    FloatImm,
    FloorDiv,
    IntImm,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    Var,
    evaluate,
    floordiv,
    floormod,
    max_expr,
    min_expr,
    select,
    truncdiv,
    truncmod,
)

n, m, k = Var("n"), Var("m"), Var("k")
s = SizeVar("s")


@pytest.fixture
def ana() -> Analyzer:
    return Analyzer()


# ---- identities the issue asks for -------------------------------------------------------------
@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [
        (n * 4, 4 * n),
        ((n + 1) - 1, n),
        ((n + m) * 2 - 2 * m, n * 2),
        (n * m, m * n),
        (floordiv(n * 4, 4), n),
        (floormod(n * 4, 4), 0),
        (floordiv(n * 8 + 4, 4), n * 2 + 1),
        (floordiv(n, 2) * 2 + floormod(n, 2), n),
        ((n + 1) * (n - 1), n * n - 1),
        ((n + m) * (n + m), n * n + 2 * n * m + m * m),
        (n - n, 0),
        (3 * n - 2 * n - n, 0),
        (floordiv(floordiv(n, 2), 3), floordiv(n, 6)),
        (floormod(floormod(n, 8), 4), floormod(n, 4)),
        (floordiv(n * 2, 4), floordiv(n, 2)),
        (floormod(n * 6, 4), floormod(n * 3, 2) * 2),
        (floormod(n * 5 + 7, 4), floormod(n + 3, 4)),
        (floordiv(n + 5, 4) * 4 + floormod(n + 1, 4), n + 5),
        (floordiv(n, -2), floordiv(n * -1, 2)),
        (min_expr(n, m), min_expr(m, n)),
        (min_expr(n + 1, m + 1), min_expr(n, m) + 1),
        (min_expr(n, m) + max_expr(n, m), n + m),
        (max_expr(n * 2, n * 2), n * 2),
        (select(n < 3, m, m), m),
        (Cast("int64", IntImm("int32", 3)), 3),
    ],
)
def test_can_prove_equal_identities(ana: Analyzer, lhs: PrimExpr, rhs: PrimExpr) -> None:
    assert ana.can_prove_equal(lhs, rhs)
    # And the simplified forms agree with the originals at a few points.
    for value in (-9, -1, 0, 1, 6, 13):
        point = {n: value, m: 3 - value}
        assert evaluate(ana.simplify(lhs), point) == evaluate(lhs, point)


@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [
        (n, m),
        (n * 4, n * 5),
        (floordiv(n, 2) * 2, n),  # only true for even n
        (floormod(n, 4), n),  # only true for 0 <= n < 4
        (n * n, n),
        (min_expr(n, m), n),
        (truncdiv(n, 2), floordiv(n, 2)),  # differ for odd negative n
    ],
)
def test_can_prove_equal_does_not_claim_falsehoods(
    ana: Analyzer, lhs: PrimExpr, rhs: PrimExpr
) -> None:
    assert not ana.can_prove_equal(lhs, rhs)


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (n * 4, "n * 4"),
        (4 * n, "n * 4"),
        ((n + 1) - 1, "n"),
        (m + n, "m + n"),
        (n + m, "m + n"),
        (n - m, "n - m"),
        (m - n, "m - n"),
        (1 - n, "1 - n"),
        (-n - 1, "n * -1 - 1"),
        ((n + 2) * 3, "n * 3 + 6"),
        (n * n + n * 2 + 1, "n * n + n * 2 + 1"),
        (floordiv(n * 8 + 4, 4), "n * 2 + 1"),
        (floordiv(n * 4 + m, 4), "n + m // 4"),
        (floormod(n * 4 + m, 4), "m % 4"),
        (floordiv(n - 1, 4), "(n - 1) // 4"),
        (min_expr(n + 1, m + 1), "T.min(m, n) + 1"),
        (max_expr(4, n), "T.max(n, 4)"),
        (IntImm(3) + IntImm(4) * IntImm(5), "23"),
    ],
)
def test_simplified_text_is_canonical(ana: Analyzer, expr: PrimExpr, text: str) -> None:
    assert str(ana.simplify(expr)) == text


def test_constant_folding_of_every_operation(ana: Analyzer) -> None:
    from relaxvm.ir import Add, And, FloorMod, Max, Min, Mul, Not, Sub

    five, three = IntImm(5), IntImm(3)
    assert ana.simplify(Add(five, three)) == 8
    assert ana.simplify(Sub(five, three)) == 2
    assert ana.simplify(Mul(five, three)) == 15
    assert ana.simplify(FloorDiv(IntImm(-5), three)) == -2
    assert ana.simplify(FloorMod(IntImm(-5), three)) == 1
    assert ana.simplify(truncdiv(IntImm(-5), three)) == -1
    assert ana.simplify(truncmod(IntImm(-5), three)) == -2
    assert ana.simplify(Min(five, three)) == 3
    assert ana.simplify(Max(five, three)) == 5
    assert ana.simplify(Add(five, three) < IntImm(9)) == IntImm("bool", 1)
    true, false = IntImm("bool", 1), IntImm("bool", 0)
    assert ana.simplify(And(true, Not(false))) == true
    assert ana.simplify(Select(false, five, three)) == 3
    assert ana.simplify(Cast("int8", IntImm(300))) == IntImm("int8", 44)  # wraps, as evaluated
    assert ana.simplify(Cast("float32", five)) == FloatImm("float32", 5.0)
    x = Var("x", "float32")
    folded = ana.simplify(x + (FloatImm("float32", 1.5) * 2.0))
    assert str(folded) == "x + 3.0"


def test_division_by_constant_zero_is_left_alone(ana: Analyzer) -> None:
    expr = FloorDiv(n, IntImm(0))
    assert ana.simplify(expr) == expr
    with pytest.raises(VMValueError, match="division by zero"):
        evaluate(ana.simplify(expr), {n: 1})


# ---- comparisons and proofs --------------------------------------------------------------------
def test_decidable_comparisons_fold(ana: Analyzer) -> None:
    assert ana.simplify(n + 1 > n) == IntImm("bool", 1)
    assert ana.simplify(n < n) == IntImm("bool", 0)
    assert ana.simplify((n * 2).equal(3)) == IntImm("bool", 0)  # 2n is even
    assert ana.simplify((n * 2).not_equal(n + n)) == IntImm("bool", 0)
    assert ana.can_prove(n + 1 > n)
    assert ana.can_prove(n * 4 <= n * 4)
    assert ana.can_prove((n * 4).equal(4 * n))
    assert ana.can_prove(s >= 0)
    assert ana.can_prove(floordiv(s, 2) >= 0)
    assert ana.can_prove(floormod(n, 3) < 3)
    assert ana.can_prove(floormod(n, 3) >= 0)
    assert ana.can_prove(s * s + 1 > 0)
    assert ana.can_prove(n * n >= 0)


def test_undecidable_comparisons_stay_and_are_not_proved(ana: Analyzer) -> None:
    assert not ana.can_prove(n < 4)
    assert not ana.can_prove(n > m)
    assert not ana.can_prove(s > 0)
    assert str(ana.simplify(n * 4 < 16)) == "n < 4"
    assert str(ana.simplify(n <= 3)) == "n < 4"
    assert str(ana.simplify(n > 3)) == "n >= 4"
    assert str(ana.simplify(n <= m)) == "m >= n"
    assert str(ana.simplify(~(n < 4))) == "n >= 4"
    assert str(ana.simplify((n * 2).equal(m * 2 + 4))) == "m == n - 2"  # m sorts first


def test_logic_simplification(ana: Analyzer) -> None:
    assert ana.can_prove((n < 4) | (n >= 4))
    assert ana.simplify((n < 4) & (n >= 4)) == IntImm("bool", 0)
    assert ana.simplify((n < 4) & (n < 4)) == ana.simplify(n < 4)
    assert ana.can_prove((n + 1 > n) & (s >= 0))
    assert not ana.can_prove((n + 1 > n) & (n > 0))
    assert ana.can_prove((n > 0) | (s >= 0))


def test_can_prove_requires_a_bool(ana: Analyzer) -> None:
    with pytest.raises(VMTypeError, match=r"can_prove: the condition must be a bool expression"):
        ana.can_prove(n + 1)


def test_min_max_of_ordered_arguments(ana: Analyzer) -> None:
    assert ana.simplify(min_expr(n, n + 1)) == n
    assert ana.simplify(max_expr(n, n + 1)) == ana.simplify(n + 1)
    assert ana.simplify(max_expr(s, 0)) == s
    assert ana.simplify(min_expr(floormod(n, 4), 4)) == floormod(n, 4)
    assert isinstance(ana.simplify(min_expr(n, m)), type(min_expr(n, m)))


def test_truncated_division_of_non_negative_values_becomes_floor(ana: Analyzer) -> None:
    assert ana.can_prove_equal(truncdiv(s, 4), floordiv(s, 4))
    assert ana.can_prove_equal(truncmod(s, 4), floormod(s, 4))
    assert ana.can_prove_equal(truncdiv(s, -4), floordiv(s, 4) * -1)
    assert not ana.can_prove_equal(truncdiv(n, 4), floordiv(n, 4))


# ---- bounds ------------------------------------------------------------------------------------
def test_const_int_bound_basics(ana: Analyzer) -> None:
    assert ana.const_int_bound(IntImm(5)) == ConstIntBound(5, 5)
    unbounded = ana.const_int_bound(n)
    assert unbounded.min_value == ConstIntBound.NEG_INF == -math.inf
    assert unbounded.max_value == ConstIntBound.POS_INF
    assert ana.const_int_bound(s) == ConstIntBound(0, None)
    assert ana.const_int_bound(floormod(n, 3)) == ConstIntBound(0, 2)
    assert ana.const_int_bound(floormod(s, -3)) == ConstIntBound(-2, 0)
    assert ana.const_int_bound(n - n) == ConstIntBound(0, 0)  # via the simplified form
    assert ana.const_int_bound(s * s - 1) == ConstIntBound(-1, None)
    assert ana.const_int_bound(n < 3) == ConstIntBound(0, 1)
    assert ana.const_int_bound(Var("b", "int8")) == ConstIntBound(-128, 127)
    assert ana.const_int_bound(Var("u", "uint8") + 1) == ConstIntBound(1, 256)
    assert ana.const_int_bound(Var("w", "uint64")) == ConstIntBound(0, None)


def test_update_narrows_bounds_and_enables_proofs(ana: Analyzer) -> None:
    ana.update(n, 0, 10)
    assert ana.const_int_bound(n * 3 - 2) == ConstIntBound(-2, 28)
    assert ana.const_int_bound(floordiv(n, 4)) == ConstIntBound(0, 2)
    assert ana.simplify(min_expr(n, 20)) == n
    assert ana.simplify(floordiv(n, 16)) == 0
    assert ana.simplify(floormod(n, 11)) == n
    assert ana.can_prove(n < 11)
    ana.update(n, ConstIntBound(2, None))  # intersected with [0, 10]
    assert ana.const_int_bound(n) == ConstIntBound(2, 10)
    ana.update(n, ConstIntBound(-5, 5), True)  # TVM's positional override
    assert ana.const_int_bound(n) == ConstIntBound(-5, 5)


def test_update_errors(ana: Analyzer) -> None:
    with pytest.raises(VMValueError, match=r"empty interval \[3, 1\] for 'n'"):
        ana.update(n, 3, 1)
    ana.update(n, 0, 10)
    with pytest.raises(VMValueError, match="contradicts the known"):
        ana.update(n, 20, 30)
    with pytest.raises(VMTypeError, match="expected a Var"):
        ana.update(n + 1, 0, 1)  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match="only integer variables"):
        ana.update(Var("x", "float32"), 0, 1)


def test_bind_to_expression_substitutes(ana: Analyzer) -> None:
    ana.bind(m, n * 2)
    assert ana.can_prove_equal(m, n + n)
    assert str(ana.simplify(m + 1)) == "n * 2 + 1"
    ana.bind(k, 5)
    assert ana.simplify(k * m) == ana.simplify(n * 10)
    assert ana.const_int_bound(k) == ConstIntBound(5, 5)
    with pytest.raises(VMValueError, match="'m' is already bound"):
        ana.bind(m, n)
    with pytest.raises(VMValueError, match="cyclic"):
        ana.bind(n, m + 1)  # m is n * 2
    with pytest.raises(VMTypeError, match="has type int64 but `x` has type float32"):
        ana.bind(Var("p"), Var("x", "float32"))


def test_bind_to_range_sets_bounds(ana: Analyzer) -> None:
    ana.bind(n, Range(0, 16))
    assert ana.const_int_bound(n) == ConstIntBound(0, 15)
    assert ana.simplify(floordiv(n, 16)) == 0
    ana.bind(m, Range.from_min_extent(s, 4))
    assert ana.const_int_bound(m) == ConstIntBound(0, None)
    with pytest.raises(VMValueError, match="range for 'k' is empty"):
        ana.bind(k, Range(5, 5))


def test_constraint_scope_adds_and_removes_facts(ana: Analyzer) -> None:
    with ana.constraint_scope((n >= 5) & (m < n)):
        assert ana.can_prove(n > 4)
        assert ana.const_int_bound(n).min_value == 5
        assert ana.can_prove(m < n)  # remembered as a fact
        assert ana.simplify(max_expr(n, 4)) == n
    assert not ana.can_prove(n > 4)
    assert not ana.can_prove(m < n)
    assert ana.const_int_bound(n).min_value == -math.inf


def test_simplify_keeps_input_when_a_constant_would_overflow(ana: Analyzer) -> None:
    small = Var("b", "int8")
    expr = small * 100 + small * 100  # the coefficient 200 does not fit int8
    assert ana.simplify(expr) is expr


def test_simplify_long_sums(ana: Analyzer) -> None:
    total: PrimExpr = n
    for index in range(2000):
        total = total + m if index % 2 else total - m
    assert ana.simplify(total) == n
