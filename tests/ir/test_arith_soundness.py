"""Randomized soundness of the simplifier, the prover and the bounds.

Every claim the analyzer makes is checked by evaluation: a simplified expression must evaluate
to the same value as the original at every sampled point, a proved condition must be true at
every sampled point, and every value must lie in the computed bound. Seeded and bounded so the
whole file runs in well under 3 seconds.
"""

from __future__ import annotations

import random

import pytest

from relaxvm.errors import VMValueError
from relaxvm.ir import (
    Analyzer,
    FloorDiv,
    FloorMod,
    PrimExpr,
    SizeVar,
    Var,
    evaluate,
    floordiv,
    floormod,
    free_vars,
    max_expr,
    min_expr,
    select,
    truncdiv,
    truncmod,
)

N = Var("n")
M = Var("m")
S = SizeVar("s")
K = Var("k")  # the analyzer is told k lies in [-3, 7]
VARIABLES = (N, M, S, K)


def _analyzer() -> Analyzer:
    analyzer = Analyzer()
    analyzer.update(K, -3, 7)
    return analyzer


def _random_point(rng: random.Random) -> dict[Var, int]:
    return {
        N: rng.randint(-20, 20),
        M: rng.randint(-20, 20),
        S: rng.randint(0, 30),
        K: rng.randint(-3, 7),
    }


def _random_comparison(rng: random.Random, depth: int) -> PrimExpr:
    a, b = _random_int_expr(rng, depth), _random_int_expr(rng, depth)
    builders = (
        lambda: a < b,
        lambda: a <= b,
        lambda: a > b,
        lambda: a >= b,
        lambda: a.equal(b),
        lambda: a.not_equal(b),
    )
    return rng.choice(builders)()


def _random_int_expr(rng: random.Random, depth: int) -> PrimExpr:
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.7:
            return rng.choice(VARIABLES)
        return N * 0 + rng.randint(-6, 9)  # folds to a constant
    a = _random_int_expr(rng, depth - 1)
    choice = rng.randrange(11)
    if choice == 0:
        return a + _random_int_expr(rng, depth - 1)
    if choice == 1:
        return a - _random_int_expr(rng, depth - 1)
    if choice == 2:
        return (
            a * _random_int_expr(rng, depth - 1) if rng.random() < 0.4 else a * rng.randint(-4, 5)
        )
    if choice in (3, 4):
        if rng.random() < 0.15:
            # A symbolic divisor (maybe zero somewhere): the node constructors never fold.
            divisor = _random_int_expr(rng, depth - 1)
            return FloorDiv(a, divisor) if choice == 3 else FloorMod(a, divisor)
        constant = rng.choice((-6, -4, -3, -2, 2, 3, 4, 6, 8))
        return floordiv(a, constant) if choice == 3 else floormod(a, constant)
    if choice == 5:
        divisor = rng.choice((-4, -3, 2, 3, 4))
        return truncdiv(a, divisor) if rng.random() < 0.5 else truncmod(a, divisor)
    if choice == 6:
        return min_expr(a, _random_int_expr(rng, depth - 1))
    if choice == 7:
        return max_expr(a, _random_int_expr(rng, depth - 1))
    if choice == 8:
        return select(_random_comparison(rng, 1), a, _random_int_expr(rng, depth - 1))
    if choice == 9:
        # Deliberately build the shapes the recombination rules look for.
        c = rng.choice((2, 3, 4))
        return floordiv(a, c) * c + floormod(a + c * rng.randint(-2, 2), c)
    return min_expr(a, N) + max_expr(N, a) - a


def _value(expr: PrimExpr, point: dict[Var, int]) -> object:
    try:
        return evaluate(expr, point)
    except VMValueError:
        return None  # division by zero at this point: no claim to check


@pytest.mark.parametrize("seed", range(4))
def test_simplify_preserves_values(seed: int) -> None:
    rng = random.Random(seed)
    analyzer = _analyzer()
    points = [_random_point(rng) for _ in range(10)]
    for _ in range(120):
        expr = _random_int_expr(rng, 4)
        simplified = analyzer.simplify(expr)
        assert {id(v) for v in free_vars(simplified)} <= {id(v) for v in free_vars(expr)}
        bound = analyzer.const_int_bound(expr)
        for point in points:
            expected = _value(expr, point)
            if expected is None:
                continue
            assert evaluate(simplified, point) == expected, (expr, simplified, point)
            assert expected in bound, (expr, bound, point)


@pytest.mark.parametrize("seed", range(4))
def test_proved_conditions_hold(seed: int) -> None:
    rng = random.Random(100 + seed)
    analyzer = _analyzer()
    points = [_random_point(rng) for _ in range(10)]
    proved = 0
    for _ in range(120):
        cond = _random_comparison(rng, 3)
        if rng.random() < 0.3:
            other = _random_comparison(rng, 2)
            cond = cond & other if rng.random() < 0.5 else cond | ~other
        simplified = analyzer.simplify(cond)
        is_proved = analyzer.can_prove(cond)
        proved += is_proved
        for point in points:
            expected = _value(cond, point)
            if expected is None:
                continue
            assert evaluate(simplified, point) == expected, (cond, simplified, point)
            if is_proved:
                assert expected is True, (cond, point)
    assert proved > 0  # the generator does produce provable conditions


@pytest.mark.parametrize("seed", range(2))
def test_proved_equalities_hold(seed: int) -> None:
    rng = random.Random(200 + seed)
    analyzer = _analyzer()
    points = [_random_point(rng) for _ in range(10)]
    for _ in range(100):
        lhs = _random_int_expr(rng, 3)
        # Half the time a rearranged copy that must be provably equal.
        rhs = lhs + N - N if rng.random() < 0.5 else _random_int_expr(rng, 3)
        if analyzer.can_prove_equal(lhs, rhs):
            for point in points:
                left, right = _value(lhs, point), _value(rhs, point)
                if left is not None and right is not None:
                    assert left == right, (lhs, rhs, point)


def test_scoped_constraints_are_sound() -> None:
    rng = random.Random(7)
    analyzer = _analyzer()
    for _ in range(60):
        constraint = _random_comparison(rng, 1)
        cond = _random_comparison(rng, 2)
        with analyzer.constraint_scope(constraint):
            is_proved = analyzer.can_prove(cond)
            simplified = analyzer.simplify(cond)
        for _ in range(30):
            point = _random_point(rng)
            if _value(constraint, point) is not True:
                continue
            expected = _value(cond, point)
            if expected is None:
                continue
            assert evaluate(simplified, point) == expected, (constraint, cond, point)
            if is_proved:
                assert expected is True, (constraint, cond, point)
