"""Expression nodes: building with operators, types, folding, equality, printing, immutability."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import (
    EQ,
    GE,
    LT,
    Add,
    And,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    Sub,
    Var,
    cast,
    const,
    convert,
    floordiv,
    floormod,
    logical_and,
    logical_not,
    logical_or,
    max_expr,
    min_expr,
    select,
    truncdiv,
    truncmod,
)
from relaxvm.runtime import DataType


# ---- building ----------------------------------------------------------------------------------
def test_python_operators_build_nodes_with_wrapped_ints() -> None:
    n = Var("n")
    product = n * 4
    assert isinstance(product, Mul) and product.a is n and product.b == 4
    reflected = 4 * n
    assert isinstance(reflected, Mul) and reflected.a == 4 and reflected.b is n
    assert isinstance(n + 1, Add) and isinstance(1 - n, Sub)
    assert isinstance(n // 2, FloorDiv) and isinstance(7 // n, FloorDiv)
    assert isinstance(n % 3, FloorMod) and isinstance(7 % n, FloorMod)
    assert (n * 4).b.dtype == "int64"


def test_negation_is_multiplication_by_minus_one() -> None:
    n = Var("n")
    negated = -n
    assert isinstance(negated, Mul) and negated.b == -1
    assert -const(5) == IntImm("int64", -5)
    assert (-FloatImm("float32", 2.5)).value == -2.5


def test_comparisons_build_nodes_and_eq_is_structural() -> None:
    n = Var("n")
    assert isinstance(n < 4, LT)
    assert isinstance(n >= 4, GE)
    assert isinstance(4 > n, LT)  # noqa: SIM300 - the reflected operator builds n < 4
    assert isinstance(n.equal(4), EQ)
    assert (n == n) is True
    assert (n + 1 == n + 1) is True
    assert (n + 1 == n + 2) is False
    assert (n + 1 != n + 2) is True


def test_builders_fold_constants_and_identities() -> None:
    n = Var("n")
    assert IntImm("int32", 3) + 4 == IntImm("int32", 7)
    assert (IntImm("int32", 3) + 4).dtype == "int32"
    assert n + 0 is n and 0 + n is n and n - 0 is n
    assert n * 1 is n and 1 * n is n
    assert n * 0 == IntImm("int64", 0)
    assert floordiv(n, 1) is n
    assert floormod(n, 1) == 0
    assert const(-7) // 2 == -4 and const(-7) % 2 == 1  # floor semantics
    assert truncdiv(-7, 2) == -3 and truncmod(-7, 2) == -1  # C semantics
    assert min_expr(3, 5) == 3 and max_expr(3, 5) == 5
    assert (const(3) < 4) == IntImm("bool", 1)


def test_constant_division_by_zero_is_refused_when_building() -> None:
    n = Var("n")
    with pytest.raises(VMValueError, match="floordiv: division by zero"):
        n // 0
    with pytest.raises(VMValueError, match="floormod: division by zero"):
        floormod(n, 0)
    # The node constructor still builds it: evaluation reports the error later.
    assert isinstance(FloorDiv(n, 0), FloorDiv)


def test_overflowing_folds_are_left_as_nodes() -> None:
    big = IntImm("int32", 2**31 - 1)
    total = big + 1
    assert isinstance(total, Add)
    assert total.dtype == "int32"


def test_integer_true_division_is_ambiguous() -> None:
    n = Var("n")
    with pytest.raises(VMTypeError, match="ambiguous"):
        n / 2
    x = Var("x", "float32")
    quotient = x / 2
    assert isinstance(quotient, Div) and quotient.dtype == "float32"
    assert quotient.b == FloatImm("float32", 2.0)


def test_type_promotion_follows_tvm() -> None:
    n = Var("n")  # int64
    m = Var("m", "int32")
    mixed = n + m
    assert mixed.dtype == "int64"
    assert isinstance(mixed.b, Cast) and mixed.b.value is m
    x = Var("x", "float32")
    assert (n + x).dtype == "float32"
    assert (m + 1).dtype == "int32"
    assert (n * 1.5).dtype == "float32"
    assert (x + Var("y", "float64")).dtype == "float64"
    c = Var("c", "bool")
    assert (c + n).dtype == "int64"


def test_node_constructors_check_types_and_never_fold() -> None:
    n = Var("n")
    m = Var("m", "int32")
    with pytest.raises(VMTypeError, match=r"Add: operand types differ \(int64 vs int32\)"):
        Add(n, m)
    assert isinstance(Add(IntImm(1), IntImm(2)), Add)
    with pytest.raises(VMTypeError, match="And: operands must be bool"):
        And(n, n)
    with pytest.raises(VMTypeError, match="Select: condition must be bool"):
        Select(n, n, n)
    with pytest.raises(VMTypeError, match="Not: operand must be bool"):
        Not(n)
    with pytest.raises(VMTypeError, match="Add: cannot combine the float 1.5"):
        Add(n, 1.5)
    with pytest.raises(VMTypeError, match="expected a PrimExpr or a number, got str"):
        n + "a"  # type: ignore[operator]


def test_immediates_validate_and_accept_both_argument_orders() -> None:
    assert IntImm(4).dtype == "int64"
    assert IntImm("int32", 4) == IntImm(4, "int32")
    assert IntImm("int32", 4).dtype == DataType("int32")
    assert IntImm(True).dtype == "bool"
    with pytest.raises(VMValueError, match=r"value 300 does not fit in int8 \(range -128..127\)"):
        IntImm("int8", 300)
    with pytest.raises(VMTypeError, match="dtype must be an integer or bool type"):
        IntImm("float32", 1)
    with pytest.raises(VMTypeError, match="value must be an int"):
        IntImm("int32", 1.5)
    assert FloatImm(1.5).dtype == "float32"
    assert FloatImm("float64", 2).value == 2.0
    with pytest.raises(VMTypeError, match="dtype must be a float type"):
        FloatImm("int32", 1.0)


def test_const_and_convert_defaults() -> None:
    assert const(3).dtype == "int64"
    assert const(True).dtype == "bool"
    assert const(1.5).dtype == "float32"
    assert const(3, "float64") == FloatImm("float64", 3.0)
    n = Var("n")
    assert convert(n) is n
    with pytest.raises(VMTypeError, match="cannot make a PrimExpr from str"):
        convert("n")  # type: ignore[arg-type]


def test_logical_operators_and_builders() -> None:
    n = Var("n")
    both = (n < 4) & (n > 1)
    assert isinstance(both, And)
    assert isinstance((n < 4) | (n > 1), Or)
    assert isinstance(~(n < 4), Not)
    assert logical_and(True, n < 4) == (n < 4)
    assert logical_and(False, n < 4) == IntImm("bool", 0)
    assert logical_or(True, n < 4) == IntImm("bool", 1)
    assert logical_not(const(False)) == IntImm("bool", 1)
    with pytest.raises(VMTypeError, match="operands must be bool expressions"):
        n & n


def test_select_and_cast_builders() -> None:
    n = Var("n")
    assert select(True, n, 0) is n
    assert isinstance(select(n < 3, 1, 2), Select)
    assert cast(n, "int64") is n
    assert cast(IntImm("int64", 300), "int8") == IntImm("int8", 44)  # wraps like hardware
    assert cast(FloatImm("float32", -2.7), "int32") == IntImm("int32", -2)  # truncates
    assert isinstance(n.astype("int32"), Cast)


# ---- truth, equality, hashing --------------------------------------------------------------
def test_bool_of_symbolic_expression_raises() -> None:
    n = Var("n")
    with pytest.raises(VMTypeError, match=r"cannot use the symbolic expression `n < 3` as a"):
        bool(n < 3)
    with pytest.raises(VMTypeError, match="as a Python bool"):
        if n:
            pass
    assert bool(IntImm("bool", 1)) is True
    assert bool(IntImm(0)) is False
    assert int(IntImm(7)) == 7
    assert [10, 20, 30][IntImm(1)] == 20  # __index__
    with pytest.raises(VMTypeError, match="to a Python int"):
        int(n)


def test_vars_compare_by_identity() -> None:
    first, second = Var("n"), Var("n")
    assert first != second
    assert first + 1 != second + 1
    assert len({first, second}) == 2
    assert SizeVar("s") != SizeVar("s")


def test_structural_equality_makes_expressions_usable_as_keys() -> None:
    n = Var("n")
    table = {n * 4 + 1: "a", n // 2: "b"}
    assert table[n * 4 + 1] == "a"
    assert table[n // 2] == "b"
    assert hash(n * 4 + 1) == hash(n * 4 + 1)
    assert IntImm(4) == 4 and hash(IntImm(4)) == hash(4)
    assert {IntImm(4): "x"}[4] == "x"
    assert IntImm(4) == np.int64(4) and np.int64(4) == IntImm(4)
    assert FloatImm(0.5) == np.float32(0.5)
    assert IntImm("int32", 4) != IntImm("int64", 4)  # the type is part of the structure
    nan = FloatImm(float("nan"))
    assert nan == FloatImm(float("nan"))  # the same constant, although NaN != NaN as a number
    assert hash(nan) == hash(FloatImm(float("nan")))
    assert (n * 4 == n * 4.0) is False


def test_nodes_are_immutable_and_copy_to_themselves() -> None:
    n = Var("n")
    expr = n * 4 + 1
    with pytest.raises(AttributeError, match="Add is immutable"):
        expr.a = n  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del expr.b
    assert copy.copy(expr) is expr
    assert copy.deepcopy(expr) is expr


def test_pickle_round_trip_keeps_shared_variables_shared() -> None:
    n = Var("n")
    expr = n * 4 + n
    restored = pickle.loads(pickle.dumps(expr))
    assert str(restored) == "n * 4 + n"
    assert restored.a.a is restored.b  # one variable, still one after loading
    assert restored != expr  # but a new variable, distinct from the original n


def test_operands_and_with_operands() -> None:
    n, m = Var("n"), Var("m")
    expr = n + 1
    assert expr.operands == (n, IntImm(1))
    assert expr.with_operands(*expr.operands) is expr  # unchanged children: no new node
    rebuilt = expr.with_operands(m, IntImm(2))
    assert isinstance(rebuilt, Add) and rebuilt.a is m
    assert Cast("int32", n).with_operands(m).dtype == "int32"
    assert n.operands == ()
    with pytest.raises(VMTypeError, match="expected 2 operands, got 1"):
        expr.with_operands(n)


def test_range() -> None:
    n = Var("n")
    rng = Range(n)
    assert rng.min == 0 and rng.extent is n
    span = Range(2, 10)
    assert span.min == 2 and span.extent == 8
    explicit = Range.from_min_extent(n, 4)
    assert explicit.min is n and explicit.extent == 4
    assert Range(2, 10) == Range.from_min_extent(2, 8)


# ---- printing ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("build", "text"),
    [
        (lambda n, m: n * 4, "n * 4"),
        (lambda n, m: 4 * n, "4 * n"),
        (lambda n, m: n // 2 + 1, "n // 2 + 1"),
        (lambda n, m: (n + 1) * 2, "(n + 1) * 2"),
        (lambda n, m: n - (m - 1), "n - (m - 1)"),
        (lambda n, m: n - m - 1, "n - m - 1"),
        (lambda n, m: n + (m + 1), "n + (m + 1)"),
        (lambda n, m: n * (m * 2), "n * (m * 2)"),
        (lambda n, m: n % 3, "n % 3"),
        (lambda n, m: (n + m) % 3, "(n + m) % 3"),
        (lambda n, m: n // (m // 2), "n // (m // 2)"),
        (lambda n, m: -n, "n * -1"),
        (lambda n, m: n - -3, "n - -3"),
        (lambda n, m: min_expr(n, m + 1), "T.min(n, m + 1)"),
        (lambda n, m: max_expr(n, 0), "T.max(n, 0)"),
        (lambda n, m: select(n < m, n, m), "T.Select(n < m, n, m)"),
        (lambda n, m: (n < m) & (m < 4), "n < m and m < 4"),
        (lambda n, m: ((n < m) | (m < 4)) & (n > 0), "(n < m or m < 4) and n > 0"),
        (lambda n, m: ~(n < m), "not n < m"),
        (lambda n, m: n.equal(m + 1), "n == m + 1"),
        (lambda n, m: EQ(n < m, IntImm("bool", 1)), "(n < m) == True"),
        (lambda n, m: n.astype("int32") + 1, 'T.Cast("int32", n) + T.int32(1)'),
        (lambda n, m: truncdiv(n, 2), "T.truncdiv(n, 2)"),
        (lambda n, m: Mod(n, IntImm(2)), "T.truncmod(n, 2)"),
        (lambda n, m: Var("x", "float32") / 2.0, "x / 2.0"),
        (lambda n, m: Var("x", "float64") + 1.0, "x + T.float64(1.0)"),
    ],
)
def test_printing_uses_minimal_parentheses(build, text: str) -> None:  # type: ignore[no-untyped-def]
    expr = build(Var("n"), Var("m"))
    assert str(expr) == text


def test_repr_names_the_node_type() -> None:
    n = Var("n")
    assert repr(n * 4 + 1) == "Add[int64](n * 4 + 1)"
    assert repr(n) == "Var('n', 'int64')"
    assert repr(IntImm("int32", 3)) == "IntImm('int32', 3)"
    assert repr(SizeVar("s")) == "SizeVar('s', 'int64')"
    assert repr(Min(n, IntImm(1))) == "Min[int64](T.min(n, 1))"
    assert repr(Max(n, IntImm(1))).startswith("Max[int64]")


def test_primexpr_is_the_common_base() -> None:
    n = Var("n")
    for expr in (n, n + 1, n < 1, IntImm(1), FloatImm(1.0), Cast("int32", n)):
        assert isinstance(expr, PrimExpr)
    assert Var("x", "handle").dtype == "handle"
    with pytest.raises(VMTypeError, match="name must be a str"):
        Var(3)  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match="Var: DataType: cannot parse data type 'int77'"):
        Var("n", "int77")


@pytest.mark.parametrize("fold", ["min", "max"])
def test_constant_min_max_propagate_nan_like_numpy(fold: str) -> None:
    # Folding T.min/T.max of constants gives what every target computes at run time:
    # numpy's minimum/maximum, where a NaN on either side wins.
    from relaxvm.ir import evaluate
    from relaxvm.ir import op as sop

    make = sop.min_expr if fold == "min" else sop.max_expr
    reference = np.minimum if fold == "min" else np.maximum
    for a, b in [(float("nan"), 1.0), (1.0, float("nan")), (-0.0, 0.0), (2.0, -3.0)]:
        folded = make(FloatImm(a, "float32"), FloatImm(b, "float32"))
        want = reference(np.float32(a), np.float32(b))
        got = folded.value if isinstance(folded, FloatImm) else evaluate(folded, {})
        if np.isnan(want):
            assert np.isnan(got), (a, b, folded)
        else:
            assert got == want, (a, b, folded)
