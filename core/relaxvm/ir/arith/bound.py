"""Constant integer bounds: the interval ``[min_value, max_value]`` an integer expression lies in.

Bounds come from interval arithmetic over the known ranges of the variables: a ``SizeVar`` is
``>= 0``, an unsigned or narrow integer variable lies in its type's range, and facts added with
``Analyzer.update`` / ``bind`` / ``constraint_scope`` narrow a variable further. Ends that are
unknown are infinite (``ConstIntBound.POS_INF`` / ``NEG_INF``, which are ``math.inf``); ``int64``
variables are unbounded by default, as in TVM, whose infinities are the ``int64`` limits.

Every bound is *sound*: the true value always lies inside it, assuming integer arithmetic does
not overflow. It may be loose: ``n - n`` analysed as written gives ``[-inf, inf]`` (the
analyzer's public ``const_int_bound`` also analyses the simplified form to tighten this).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .._scalar import dtype_int_range, is_bool_dtype, is_int_dtype
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
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
    Select,
    SizeVar,
    Sub,
    Var,
)

__all__ = ["Bound", "BoundAnalyzer", "ConstIntBound", "interval_mul", "interval_power"]

#: One end of an interval: an int, or ``math.inf`` / ``-math.inf`` for "unknown".
End = int | float
#: An inclusive interval ``(low, high)``.
Bound = tuple[End, End]

INF = math.inf
UNBOUNDED: Bound = (-INF, INF)
_BOOLEAN: Bound = (0, 1)
_CACHE_LIMIT = 20000


class ConstIntBound:
    """An inclusive integer interval, TVM's ``arith.ConstIntBound``.

    Attributes
    ----------
    min_value, max_value : int or float
        The ends; ``NEG_INF`` / ``POS_INF`` (``-math.inf`` / ``math.inf``) when unbounded.
    """

    __slots__ = ("max_value", "min_value")
    POS_INF: float = INF
    NEG_INF: float = -INF

    def __init__(self, min_value: End | None, max_value: End | None) -> None:
        self.min_value: End = -INF if min_value is None else _int_or_inf(min_value)
        self.max_value: End = INF if max_value is None else _int_or_inf(max_value)

    @property
    def is_const(self) -> bool:
        """Whether the interval holds exactly one value."""
        return self.min_value == self.max_value

    def __contains__(self, value: int) -> bool:
        return self.min_value <= value <= self.max_value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConstIntBound):
            return NotImplemented
        return (self.min_value, self.max_value) == (other.min_value, other.max_value)

    def __hash__(self) -> int:
        return hash((self.min_value, self.max_value))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((self.min_value, self.max_value))

    def __repr__(self) -> str:
        return f"ConstIntBound(min_value={self.min_value}, max_value={self.max_value})"


def _int_or_inf(value: End) -> End:
    if isinstance(value, float) and math.isinf(value):
        return value
    return int(value)


def intersect(x: Bound, y: Bound) -> Bound:
    """The intersection of two intervals (possibly empty: low > high)."""
    return max(x[0], y[0]), min(x[1], y[1])


def _product(x: End, y: End) -> End:
    # The ends are limits of finite values, so 0 times an infinite end is 0, not NaN.
    if x == 0 or y == 0:
        return 0
    return x * y


def interval_mul(x: Bound, y: Bound) -> Bound:
    """The interval of ``a * b`` for ``a`` in ``x`` and ``b`` in ``y``."""
    corners = [_product(p, q) for p in x for q in y]
    return min(corners), max(corners)


def interval_power(x: Bound, power: int) -> Bound:
    """The interval of ``a ** power`` for ``a`` in ``x`` (even powers are never negative)."""
    low, high = x
    if power % 2 == 1 or low >= 0:
        return _pow(low, power), _pow(high, power)
    if high <= 0:
        return _pow(high, power), _pow(low, power)
    return 0, max(_pow(low, power), _pow(high, power))


def _pow(x: End, power: int) -> End:
    if math.isinf(x):
        return x if power % 2 == 1 else INF
    return int(x) ** power


def _divide_end(x: End, y: End, floor: bool) -> End | None:
    """``x / y`` rounded (floor or toward zero) at interval ends; None if undefined."""
    if math.isinf(x) and math.isinf(y):
        return None
    if math.isinf(x):
        return x if y > 0 else -x
    if math.isinf(y):
        # |x| / |y| tends to 0 from one side; floor of a tiny negative quotient is -1.
        if x == 0 or not floor:
            return 0
        return 0 if (x > 0) == (y > 0) else -1
    x, y = int(x), int(y)
    if floor:
        return x // y
    quotient = abs(x) // abs(y)
    return -quotient if (x < 0) != (y < 0) else quotient


def interval_div(x: Bound, y: Bound, floor: bool = True) -> Bound:
    """The interval of ``a // b`` (or C division) for ``a`` in ``x``, ``b`` in ``y``.

    Unbounded when ``y`` contains 0: the division is then undefined at some point.
    """
    if y[0] <= 0 <= y[1]:
        return UNBOUNDED
    # For a divisor of one sign the quotient is monotone in each argument, so its extremes
    # are at the corners; rounding is monotone too.
    corners = [_divide_end(p, q, floor) for p in x for q in y]
    known = [corner for corner in corners if corner is not None]
    if len(known) != len(corners):
        return UNBOUNDED
    return min(known), max(known)


def interval_floormod(x: Bound, y: Bound) -> Bound:
    """The interval of ``a % b`` (floor modulo) for ``a`` in ``x`` and ``b`` in ``y``."""
    low, high = x
    if y[0] > 0:
        if low >= 0 and high < y[0]:
            return x  # a % b == a when 0 <= a < b
        return 0, min(y[1] - 1, high) if low >= 0 else y[1] - 1
    if y[1] < 0:
        if high <= 0 and low > y[1]:
            return x
        return y[0] + 1, 0
    if y == (0, 0):
        return UNBOUNDED  # the divisor is always 0: an error, not a value
    # The divisor may be either sign (a zero divisor is an error, so it adds no value).
    return (y[0] + 1 if y[0] < 0 else 0), (y[1] - 1 if y[1] > 0 else 0)


def interval_truncmod(x: Bound, y: Bound) -> Bound:
    """The interval of C's ``a % b``: magnitude below ``|b|``, with the sign of ``a``."""
    magnitude = max(abs(y[0]), abs(y[1])) - 1
    if magnitude < 0:
        return UNBOUNDED  # the divisor is always 0: an error, not a value
    low, high = x
    result_low = 0 if low >= 0 else max(-magnitude, low)
    result_high = 0 if high <= 0 else min(magnitude, high)
    return result_low, result_high


def dtype_bound(dtype: object) -> Bound:
    """The values a variable of this type can hold (``int64`` counts as unbounded)."""
    if is_bool_dtype(dtype):  # type: ignore[arg-type]
        return _BOOLEAN
    if not is_int_dtype(dtype):  # type: ignore[arg-type]
        return UNBOUNDED
    low, high = dtype_int_range(dtype)  # type: ignore[arg-type]
    if dtype.bits >= 64:  # type: ignore[attr-defined]
        return (low if low == 0 else -INF), INF
    return low, high


class BoundAnalyzer:
    """Computes :class:`ConstIntBound`-style intervals of expressions as written.

    Parameters
    ----------
    var_bounds : mapping of Var to Bound
        Facts about variables (live view: the analyzer updates it and calls :meth:`clear`).
    bindings : mapping of Var to PrimExpr
        Variables that stand for an expression; their bound is that expression's bound.
    """

    def __init__(self, var_bounds: Mapping[Var, Bound], bindings: Mapping[Var, PrimExpr]) -> None:
        self._var_bounds = var_bounds
        self._bindings = bindings
        self._cache: dict[PrimExpr, Bound] = {}

    def clear(self) -> None:
        """Forget cached results (call after any fact changes)."""
        self._cache.clear()

    def var_bound(self, var: Var) -> Bound:
        """The interval of a variable from its type, its kind and the known facts."""
        bound = dtype_bound(var.dtype)
        if isinstance(var, SizeVar):
            bound = intersect(bound, (0, INF))
        fact = self._var_bounds.get(var)
        if fact is not None:
            bound = intersect(bound, fact)
        target = self._bindings.get(var)
        if target is not None:
            bound = intersect(bound, self.bound(target))
        return bound

    def bound(self, expr: PrimExpr) -> Bound:
        """The interval of ``expr`` (unbounded for non-integer expressions)."""
        cached = self._cache.get(expr)
        if cached is not None:
            return cached
        result = self._compute(expr)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[expr] = result
        return result

    def _compute(self, expr: PrimExpr) -> Bound:
        if isinstance(expr, IntImm):
            return expr.value, expr.value
        if isinstance(expr, Var):
            return self.var_bound(expr)
        if isinstance(expr, (EQ, NE, LT, LE, GT, GE, And, Or, Not)):
            return _BOOLEAN
        if not (is_int_dtype(expr.dtype) or is_bool_dtype(expr.dtype)):
            return UNBOUNDED
        if isinstance(expr, Select):
            true_bound = self.bound(expr.true_value)
            false_bound = self.bound(expr.false_value)
            return min(true_bound[0], false_bound[0]), max(true_bound[1], false_bound[1])
        if isinstance(expr, Cast):
            target = dtype_bound(expr.dtype)
            if is_int_dtype(expr.value.dtype) or is_bool_dtype(expr.value.dtype):
                source = self.bound(expr.value)
                if target[0] <= source[0] and source[1] <= target[1]:
                    return source  # the value fits, so the cast changes nothing
            return target
        # Not intersected with the type's range: arithmetic is exact (no overflow), as in
        # evaluate(), so `u8 + 1` may reach 256.
        return self._binary(expr)

    def _sum_chain(self, expr: PrimExpr) -> Bound:
        # Long sums are left-deep chains: walk the spine in a loop instead of recursing.
        spine: list[PrimExpr] = []
        node = expr
        while isinstance(node, (Add, Sub)) and node not in self._cache:
            spine.append(node)
            node = node.a  # type: ignore[attr-defined]
        low, high = self.bound(node)
        for link in reversed(spine):
            right_low, right_high = self.bound(link.b)  # type: ignore[attr-defined]
            if isinstance(link, Add):
                low, high = low + right_low, high + right_high
            else:
                low, high = low - right_high, high - right_low
            self._cache[link] = (low, high)
        return low, high

    def _binary(self, expr: PrimExpr) -> Bound:
        if not isinstance(expr, (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)):
            return UNBOUNDED
        if isinstance(expr, (Add, Sub)):
            return self._sum_chain(expr)
        x = self.bound(expr.a)
        y = self.bound(expr.b)
        if isinstance(expr, Mul):
            if expr.a == expr.b:
                return interval_power(x, 2)
            return interval_mul(x, y)
        if isinstance(expr, FloorDiv):
            return interval_div(x, y, floor=True)
        if isinstance(expr, Div):
            return interval_div(x, y, floor=False)
        if isinstance(expr, FloorMod):
            return interval_floormod(x, y)
        if isinstance(expr, Mod):
            return interval_truncmod(x, y)
        if isinstance(expr, Min):
            return min(x[0], y[0]), min(x[1], y[1])
        return max(x[0], y[0]), max(x[1], y[1])
