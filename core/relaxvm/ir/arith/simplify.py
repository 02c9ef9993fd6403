"""The canonical simplifier: integer expressions become polynomials over atoms, then expressions.

Integer expressions are rewritten into :class:`~.poly.Poly` form (like terms collected, constants
folded, products distributed) and back, so equal polynomials print identically. On the way:

* ``//`` and ``%`` by a constant split off the exactly divisible terms
  (``(n*8 + 4) // 4 -> n*2 + 1``, ``(n*4 + m) % 4 -> m % 4``), reduce ``%`` coefficients modulo
  the divisor, divide out a common factor (``(n*2) // 4 -> n // 2``), nest
  (``x // 2 // 3 -> x // 6``, ``x % 8 % 4 -> x % 4``), and fold when the bounds of the remainder
  fix the quotient (``(n % 4) // 4 -> 0``); ``(x // c) * c + x % c`` recombines to ``x``;
* ``T.min`` / ``T.max`` pick the provably smaller / larger argument, pull out terms both
  arguments share (``min(n + 1, m + 1) -> min(n, m) + 1``), sort their arguments, and
  ``min(a, b) + max(a, b)`` recombines to ``a + b``;
* integer comparisons fold to ``True`` / ``False`` when the bound of ``lhs - rhs`` decides them,
  and are otherwise normalised to ``P < Q``, ``P > Q``, ``P == Q`` or ``P != Q`` with the common
  factor divided out;
* ``Select``, ``Cast``, logic and float arithmetic fold constants and trivial cases.

Every rewrite is an identity of integer arithmetic without overflow, checked against evaluation
by a randomized test. A coefficient too large for the type makes :meth:`Simplifier.simplify`
return its input unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from math import gcd

from ...runtime.dtype import DataType
from .._scalar import cast_scalar, fits_dtype, is_bool_dtype, is_float_dtype, is_int_dtype
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOpExpr,
    Cast,
    CmpExpr,
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
    Select,
    Sub,
    Var,
)
from .bound import INF, Bound, BoundAnalyzer, interval_power
from .poly import Poly, PolyOverflow, int_const, order_key

__all__ = ["Simplifier"]

_TRUE = IntImm("bool", 1)
_FALSE = IntImm("bool", 0)
_NEGATED: dict[type[PrimExpr], type[CmpExpr]] = {EQ: NE, NE: EQ, LT: GE, LE: GT, GT: LE, GE: LT}


def _bool(value: bool) -> IntImm:
    return _TRUE if value else _FALSE


def _positive_const(expr: PrimExpr) -> int | None:
    """The value of a positive integer constant, else None."""
    return expr.value if isinstance(expr, IntImm) and expr.value > 0 else None


#: The node types `_poly_uncached` turns into polynomials directly.
_POLY_NODES = (IntImm, Var, Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, Min, Max)


class Simplifier:
    """Canonicalising simplifier over the facts of a :class:`BoundAnalyzer`.

    Parameters
    ----------
    bounds : BoundAnalyzer
        Gives the intervals of atoms.
    bindings : mapping of Var to PrimExpr
        Variables replaced by expressions while simplifying.
    """

    def __init__(self, bounds: BoundAnalyzer, bindings: Mapping[Var, PrimExpr]) -> None:
        self._bounds = bounds
        self._bindings = bindings
        self._poly_memo: dict[int, tuple[PrimExpr, Poly]] = {}
        self._expr_memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}

    # ---- entry points -----------------------------------------------------------------------
    def simplify(self, expr: PrimExpr) -> PrimExpr:
        """The simplified form of ``expr`` (``expr`` itself if a constant would overflow)."""
        try:
            return self._simplify(expr)
        except PolyOverflow:
            return expr
        finally:
            self._poly_memo.clear()
            self._expr_memo.clear()

    def to_poly(self, expr: PrimExpr) -> Poly | None:
        """The canonical polynomial of an integer expression (None if a constant overflows)."""
        try:
            return self._poly(expr)
        except PolyOverflow:
            return None
        finally:
            self._poly_memo.clear()
            self._expr_memo.clear()

    def poly_bound(self, poly: Poly) -> Bound:
        """The interval of a polynomial: each monomial bounded with repeated atoms as powers."""
        low: float = 0
        high: float = 0
        for monomial, coefficient in poly.terms.items():
            term: Bound = (1, 1)
            counts: dict[PrimExpr, int] = {}
            for atom in monomial:
                counts[atom] = counts.get(atom, 0) + 1
            for atom, power in counts.items():
                atom_bound = interval_power(self._bounds.bound(atom), power)
                corners = [_mul_end(p, q) for p in term for q in atom_bound]
                term = (min(corners), max(corners))
            scaled = sorted((_mul_end(term[0], coefficient), _mul_end(term[1], coefficient)))
            low, high = low + scaled[0], high + scaled[1]
        return low, high  # type: ignore[return-value]

    # ---- integer expressions: to polynomials -------------------------------------------------
    def _poly(self, expr: PrimExpr) -> Poly:
        cached = self._poly_memo.get(id(expr))
        if cached is not None:
            return cached[1]
        result = self._poly_uncached(expr)
        self._poly_memo[id(expr)] = (expr, result)
        return result

    def _poly_uncached(self, expr: PrimExpr) -> Poly:
        dtype = expr.dtype
        if isinstance(expr, IntImm):
            return Poly.constant(dtype, expr.value)
        if isinstance(expr, Var):
            target = self._bindings.get(expr)
            return Poly.atom(expr) if target is None else self._poly(target)
        if isinstance(expr, (Add, Sub)):
            return self._sum_chain(expr)
        if isinstance(expr, Mul):
            return self._recombine(self._poly(expr.a) * self._poly(expr.b))
        if isinstance(expr, (FloorDiv, FloorMod)):
            a, b = self._poly(expr.a), self._poly(expr.b)
            if isinstance(expr, FloorDiv):
                return self._floordiv(a, b)
            return self._floormod(a, b)
        if isinstance(expr, (Div, Mod)):
            return self._truncated(expr)
        if isinstance(expr, (Min, Max)):
            return self._min_max(type(expr), self._poly(expr.a), self._poly(expr.b))
        # Select, Cast and anything else: simplify inside, keep as an atom unless constant.
        simplified = self._simplify_non_poly(expr)
        if isinstance(simplified, IntImm):
            return Poly.constant(dtype, simplified.value)
        # Only re-enter for nodes this method decomposes; anything else (a BufferLoad rebuilt
        # with simplified indices, a call) would come back as a new object every time and
        # recurse forever.
        if simplified is not expr and isinstance(simplified, _POLY_NODES):
            return self._poly(simplified)
        return Poly.atom(simplified)

    def _sum_chain(self, expr: PrimExpr) -> Poly:
        """A sum, walking its left spine in a loop: long sums are left-deep chains, and
        recursing once per term would hit Python's recursion limit."""
        spine: list[PrimExpr] = []
        node = expr
        while isinstance(node, (Add, Sub)) and id(node) not in self._poly_memo:
            spine.append(node)
            node = node.a  # type: ignore[attr-defined]
        total = self._poly(node)
        for link in reversed(spine):
            right = self._poly(link.b)  # type: ignore[attr-defined]
            total = self._recombine(total + right if isinstance(link, Add) else total - right)
            self._poly_memo[id(link)] = (link, total)
        return total

    def _const(self, dtype: DataType, value: int) -> Poly:
        return Poly.constant(dtype, value)

    def _floordiv(self, a: Poly, b: Poly) -> Poly:
        dtype = a.dtype
        if not b.is_constant or b.const_term == 0:
            return self._opaque_division(FloorDiv, a, b)
        divisor = b.const_term
        if divisor < 0:
            a, divisor = a.scale(-1), -divisor  # a // -c == (-a) // c
        divisible = [m for m, c in a.terms.items() if c % divisor == 0]
        exact, rest = a.split(divisible)
        quotient = exact.divide_exact(divisor)
        if rest.is_zero:
            return quotient
        low, high = self.poly_bound(rest)
        if _finite(low, high) and low // divisor == high // divisor:
            return quotient.plus_const(int(low) // divisor)
        common = gcd(rest.coefficient_gcd(), divisor)
        if common > 1:
            rest, divisor = rest.divide_exact(common), divisor // common
            if divisor == 1:
                return quotient + rest
        inner = rest.single_atom()
        inner_divisor = _positive_const(inner.b) if isinstance(inner, FloorDiv) else None
        if inner is not None and inner_divisor is not None:
            # floor(floor(x / p) / q) == floor(x / (p * q)) for positive p, q.
            nested = self._floordiv(
                self._poly(inner.a),  # type: ignore[attr-defined]
                self._const(dtype, inner_divisor * divisor),
            )
            return quotient + nested
        atom = FloorDiv(rest.to_expr(), int_const(dtype, divisor))
        return quotient + Poly.atom(atom)

    def _floormod(self, a: Poly, b: Poly) -> Poly:
        dtype = a.dtype
        if not b.is_constant or b.const_term == 0:
            return self._opaque_division(FloorMod, a, b)
        divisor = b.const_term
        if divisor < 0:
            # a % -c == -((-a) % c): floor modulo takes the divisor's sign.
            return self._floormod(a.scale(-1), self._const(dtype, -divisor)).scale(-1)
        rest = Poly(dtype, {m: c % divisor for m, c in a.terms.items()})
        if rest.is_zero:
            return rest
        low, high = self.poly_bound(rest)
        if _finite(low, high) and low // divisor == high // divisor:
            return rest.plus_const(-(int(low) // divisor) * divisor)
        common = gcd(rest.coefficient_gcd(), divisor)
        if common > 1:
            # (g * x) % (g * c) == g * (x % c)
            reduced = self._floormod(
                rest.divide_exact(common), self._const(dtype, divisor // common)
            )
            return reduced.scale(common)
        inner = rest.single_atom()
        inner_divisor = _positive_const(inner.b) if isinstance(inner, FloorMod) else None
        if inner is not None and inner_divisor is not None and inner_divisor % divisor == 0:
            # (x % (k * c)) % c == x % c
            return self._floormod(self._poly(inner.a), b)  # type: ignore[attr-defined]
        return Poly.atom(FloorMod(rest.to_expr(), int_const(dtype, divisor)))

    def _opaque_division(self, node_type: type[BinaryOpExpr], a: Poly, b: Poly) -> Poly:
        """Division by a non-constant (or zero) divisor: fold only 0 <= a < b."""
        if a.is_zero and not b.is_zero:
            # 0 // b == 0 % b == 0 for any non-zero b; b == 0 would be an error anyway.
            divisor_low, divisor_high = self.poly_bound(b)
            if divisor_low > 0 or divisor_high < 0:
                return a
        if not b.is_constant:
            num_low, num_high = self.poly_bound(a)
            div_low, _ = self.poly_bound(b)
            if div_low > 0 and num_low >= 0 and num_high < div_low:
                return self._const(a.dtype, 0) if node_type is FloorDiv else a
        return Poly.atom(node_type(a.to_expr(), b.to_expr()))

    def _truncated(self, expr: PrimExpr) -> Poly:
        """C division / remainder: constants fold; with a >= 0 and constant b they floor."""
        a, b = self._poly(expr.a), self._poly(expr.b)  # type: ignore[attr-defined]
        is_div = isinstance(expr, Div)
        if a.is_constant and b.is_constant and b.const_term != 0:
            value = expr._scalar_fn(a.const_term, b.const_term)  # type: ignore[attr-defined]
            return self._const(a.dtype, value)
        if b.is_constant and b.const_term != 0 and self.poly_bound(a)[0] >= 0:
            # For a >= 0: a / c == floor(a / |c|) * sign(c) and a % c == a % |c|.
            divisor = abs(b.const_term)
            positive = self._const(a.dtype, divisor)
            if is_div:
                quotient = self._floordiv(a, positive)
                return quotient if b.const_term > 0 else quotient.scale(-1)
            return self._floormod(a, positive)
        node_type = Div if is_div else Mod
        return Poly.atom(node_type(a.to_expr(), b.to_expr()))

    def _min_max(self, node_type: type[BinaryOpExpr], a: Poly, b: Poly) -> Poly:
        low, high = self.poly_bound(a - b)
        if high <= 0:  # a <= b everywhere
            return a if node_type is Min else b
        if low >= 0:  # a >= b everywhere
            return b if node_type is Min else a
        # min(x + c, y + c) == min(x, y) + c for the terms c both sides share.
        shared = [m for m, c in a.terms.items() if b.terms.get(m) == c]
        common, a_rest = a.split(shared)
        _, b_rest = b.split(shared)
        left, right = sorted((a_rest.to_expr(), b_rest.to_expr()), key=order_key)
        return common + Poly.atom(node_type(left, right))

    def _recombine(self, poly: Poly) -> Poly:
        """Undo splits: ``c*(x // c) + x % c -> x`` and ``min(a, b) + max(a, b) -> a + b``."""
        changed = True
        while changed:
            changed = False
            singles = {m[0]: c for m, c in poly.terms.items() if len(m) == 1}
            for atom, coefficient in singles.items():
                replacement = self._recombine_one(atom, coefficient, singles)
                if replacement is not None:
                    poly = poly + replacement
                    changed = True
                    break
        return poly

    def _recombine_one(
        self, atom: PrimExpr, coefficient: int, singles: dict[PrimExpr, int]
    ) -> Poly | None:
        """The change that recombines ``atom`` with a partner in ``singles``, if any."""
        dtype = atom.dtype
        divisor = _positive_const(atom.b) if isinstance(atom, FloorMod) else None
        if isinstance(atom, FloorMod) and divisor is not None:
            for other, other_coefficient in singles.items():
                if not (isinstance(other, FloorDiv) and other.b == atom.b):
                    continue
                if other_coefficient != coefficient * divisor:
                    continue
                numerator = self._poly(other.a)
                # x % c == y % c when x - y is a multiple of c term by term.
                difference = numerator - self._poly(atom.a)
                if all(c % divisor == 0 for c in difference.terms.values()):
                    removed = Poly(dtype, {(atom,): coefficient, (other,): other_coefficient})
                    return numerator.scale(coefficient) - removed
        if isinstance(atom, Min):
            partner = Max(atom.a, atom.b)
            if singles.get(partner) == coefficient:
                removed = Poly(dtype, {(atom,): coefficient, (partner,): coefficient})
                total = self._poly(atom.a) + self._poly(atom.b)
                return total.scale(coefficient) - removed
        return None

    # ---- everything else -------------------------------------------------------------------
    def _simplify(self, expr: PrimExpr) -> PrimExpr:
        if is_int_dtype(expr.dtype):
            return self._poly(expr).to_expr()
        return self._simplify_non_poly(expr)

    def _simplify_non_poly(self, expr: PrimExpr) -> PrimExpr:
        cached = self._expr_memo.get(id(expr))
        if cached is not None:
            return cached[1]
        result = self._simplify_node(expr)
        self._expr_memo[id(expr)] = (expr, result)
        return result

    def _simplify_node(self, expr: PrimExpr) -> PrimExpr:
        if isinstance(expr, (IntImm, FloatImm)):
            return expr
        if isinstance(expr, Var):
            target = self._bindings.get(expr)
            return expr if target is None else self._simplify(target)
        if isinstance(expr, (EQ, NE, LT, LE, GT, GE)):
            return self._compare(expr)
        if isinstance(expr, (And, Or)):
            return self._logic(expr)
        if isinstance(expr, Not):
            return self._not(self._simplify(expr.a))
        if isinstance(expr, Select):
            condition = self._simplify(expr.condition)
            if isinstance(condition, IntImm):
                return self._simplify(expr.true_value if condition.value else expr.false_value)
            true_value, false_value = (
                self._simplify(expr.true_value),
                self._simplify(expr.false_value),
            )
            if true_value == false_value:
                return true_value
            return Select(condition, true_value, false_value)
        if isinstance(expr, Cast):
            value = self._simplify(expr.value)
            if value.dtype == expr.dtype:
                return value
            if isinstance(value, (IntImm, FloatImm)):
                folded = _fold_cast(value, expr)
                if folded is not None:
                    return folded
            return Cast(expr.dtype, value)
        operands = [self._simplify(operand) for operand in expr.operands]
        return _fold_or_rebuild(expr, operands)

    def _compare(self, expr: PrimExpr) -> PrimExpr:
        a, b = expr.a, expr.b  # type: ignore[attr-defined]
        if not is_int_dtype(a.dtype):
            # Floats are compared as written (NaN and rounding make rewrites unsafe).
            return _fold_or_rebuild(expr, [self._simplify(a), self._simplify(b)])
        pa, pb = self._poly(a), self._poly(b)
        # Normalise to `d < 0`, `d == 0` or `d != 0` over the integers.
        kind: type[CmpExpr]
        node_type: type[CmpExpr]
        if isinstance(expr, (EQ, NE)):
            kind, d = type(expr), pa - pb
        elif isinstance(expr, LT):
            kind, d = LT, pa - pb
        elif isinstance(expr, LE):
            kind, d = LT, (pa - pb).plus_const(-1)
        elif isinstance(expr, GT):
            kind, d = LT, pb - pa
        else:
            kind, d = LT, (pb - pa).plus_const(-1)
        low, high = self.poly_bound(d)
        if kind is LT:
            if high < 0 or low >= 0:
                return _bool(high < 0)
        elif low == high == 0 or low > 0 or high < 0:
            return _bool((low == high == 0) == (kind is EQ))
        constant = d.const_term
        variable = d.plus_const(-constant)
        common = variable.coefficient_gcd()
        sign = variable.leading_sign()
        normalised = variable.divide_exact(common * sign)  # leading coefficient now positive
        if kind is LT:
            if sign > 0:  # common * e + k < 0  <=>  e < ceil(-k / common)
                node_type, bound_value = LT, -(constant // common)
            else:  # -common * e + k < 0  <=>  e > floor(k / common)
                node_type, bound_value = GT, constant // common
        else:
            if constant % common != 0:
                return _bool(kind is NE)
            node_type, bound_value = kind, -constant // (common * sign)
        positive = Poly(d.dtype, {m: c for m, c in normalised.terms.items() if c > 0})
        # Presentation only (each choice is deterministic): a constant bound reads as a range,
        # `n < 4` / `n >= 3`; otherwise avoid a stray 1, `m <= n` rather than `m < n + 1`.
        if positive == normalised:
            if node_type is GT:
                node_type, bound_value = GE, bound_value + 1
        elif node_type is LT and bound_value == 1:
            node_type, bound_value = LE, 0
        elif node_type is GT and bound_value == -1:
            node_type, bound_value = GE, 0
        other_side = (positive - normalised).plus_const(bound_value)
        return node_type(positive.to_expr(), other_side.to_expr())

    def _logic(self, expr: PrimExpr) -> PrimExpr:
        is_and = isinstance(expr, And)
        a, b = self._simplify(expr.a), self._simplify(expr.b)  # type: ignore[attr-defined]
        for known, other in ((a, b), (b, a)):
            if isinstance(known, IntImm):
                # True and x == x; False and x == False; True or x == True; False or x == x.
                return other if bool(known.value) == is_and else known
        if a == b:
            return a
        if self._not(a) == b:
            return _bool(not is_and)  # x and not x / x or not x
        # The operands keep their order: `(n != 0) and (m // n > 2)` is a guard, and
        # evaluate() (like C's `&&`) stops after a deciding first operand.
        return And(a, b) if is_and else Or(a, b)

    def _not(self, operand: PrimExpr) -> PrimExpr:
        if isinstance(operand, IntImm):
            return _bool(not operand.value)
        if isinstance(operand, Not):
            return operand.a
        negated = _NEGATED.get(type(operand))
        if negated is not None and is_int_dtype(operand.a.dtype):  # type: ignore[attr-defined]
            return self._compare(negated(operand.a, operand.b))  # type: ignore[attr-defined]
        return Not(operand)


def _finite(low: float, high: float) -> bool:
    return low > -INF and high < INF


def _mul_end(x: float, y: float) -> float:
    # Interval ends are limits of finite values: 0 times an infinite end is 0.
    if x == 0 or y == 0:
        return 0
    return x * y


def _fold_cast(value: PrimExpr, cast: Cast) -> PrimExpr | None:
    try:
        result = cast_scalar(value.value, cast.dtype)  # type: ignore[attr-defined]
    except Exception:  # NaN or infinity to int: left for run time
        return None
    if is_float_dtype(cast.dtype):
        return FloatImm(cast.dtype, result)
    if fits_dtype(int(result), cast.dtype):
        return IntImm(cast.dtype, int(result))
    return None


def _fold_or_rebuild(expr: PrimExpr, operands: list[PrimExpr]) -> PrimExpr:
    """Fold a node whose simplified operands are all constants, else rebuild it."""
    scalar_fn: Callable | None = getattr(type(expr), "_scalar_fn", None)
    if scalar_fn is not None and all(isinstance(op, (IntImm, FloatImm)) for op in operands):
        try:
            value = scalar_fn(*(op.value for op in operands))  # type: ignore[attr-defined]
        except ZeroDivisionError:
            value = None  # left in place: evaluation reports the error
        if value is not None:
            if is_bool_dtype(expr.dtype):
                return _bool(bool(value))
            if is_float_dtype(expr.dtype):
                return FloatImm(expr.dtype, float(value))
            if fits_dtype(int(value), expr.dtype):
                return IntImm(expr.dtype, int(value))
    return expr.with_operands(*operands)
