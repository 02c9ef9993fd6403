"""Simplify the flat-index arithmetic of fused reshapes: ``floordiv``/``floormod`` by loop
extents, symbolic ones included.

A legalized ``reshape`` followed by a ``transpose`` (splitting attention heads,
``(B, S, H*D) -> (B, H, S, D)``) reads ``A[flat // (H*D) // S % B, flat // (H*D) % S,
flat % (H*D)]`` with ``flat = ((b * S + s) * H + h) * D + d``. Every element then costs several
64-bit divisions, and the read is not recognised as contiguous along ``d``. Inside the loop nest
each loop variable ``v`` lies in ``[0, extent(v))``, so ``(q * n + r) // n = q`` and ``(q * n +
r) % n = r`` whenever ``0 <= r < n``; with that, the read above is ``A[b, s, h * D + d]``.

The general arithmetic simplifier only knows constant bounds; here a bound may be symbolic
(``s < S``), which is proven by comparing polynomials: the largest remainder, each loop
variable at its extent minus one, must not exceed the divisor minus one. Divisors are a
positive constant times extents of enclosing loops (at least 1 wherever the body runs).
"""

from __future__ import annotations

from collections import Counter

from relaxvm.ir import Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Sub, Var
from relaxvm.ir.arith.poly import Monomial, Poly, PolyOverflow

__all__ = ["simplify_index"]

_ARITHMETIC = (Add, Sub, Mul, FloorDiv, FloorMod, Min, Max)


def _poly(expr: PrimExpr) -> Poly:
    if isinstance(expr, IntImm):
        return Poly.constant(expr.dtype, expr.value)
    if isinstance(expr, Add):
        return _poly(expr.a) + _poly(expr.b)
    if isinstance(expr, Sub):
        return _poly(expr.a) - _poly(expr.b)
    if isinstance(expr, Mul):
        return _poly(expr.a) * _poly(expr.b)
    return Poly.atom(expr)


def _without(monomial: Monomial, part: Monomial) -> Monomial | None:
    """``monomial / part`` when ``part`` divides it (as a multiset of atoms)."""
    left = Counter(id(atom) for atom in monomial)
    need = Counter(id(atom) for atom in part)
    if any(left[key] < count for key, count in need.items()):
        return None
    rest: list[PrimExpr] = []
    for atom in monomial:
        if need[id(atom)]:
            need[id(atom)] -= 1
        else:
            rest.append(atom)
    return tuple(rest)


class _IndexSimplifier:
    def __init__(self, extents: dict[Var, PrimExpr]) -> None:
        self.extents = extents
        # Variables that are a whole loop extent: at least 1 wherever the body runs.
        self.positive = {id(e) for e in extents.values() if isinstance(e, Var)}

    def visit(self, expr: PrimExpr) -> PrimExpr:
        if not isinstance(expr, _ARITHMETIC):
            return expr
        operands = [self.visit(op) for op in expr.operands]
        new = expr.with_operands(*operands)
        if isinstance(new, (FloorDiv, FloorMod)):
            split = self._split(new.a, new.b)
            if split is not None:
                return split[0] if isinstance(new, FloorDiv) else split[1]
        return new

    def _atom_max(self, atom: PrimExpr) -> Poly | None:
        """The largest value of an atom over the loop ranges; None unless it is known to be
        non-negative."""
        if isinstance(atom, Var) and atom in self.extents:
            return _poly(self.extents[atom]).plus_const(-1)
        if id(atom) in self.positive:
            return Poly.atom(atom)
        if isinstance(atom, (FloorDiv, FloorMod)) and isinstance(atom.b, IntImm):
            divisor = atom.b.value
            inner = self._max_of(atom.a)
            if divisor <= 0 or inner is None:
                return None
            if isinstance(atom, FloorMod):
                return Poly.constant(atom.dtype, divisor - 1)
            if inner.is_constant:
                return Poly.constant(atom.dtype, inner.const_term // divisor)
        return None

    def _max_of(self, expr: PrimExpr) -> Poly | None:
        """The largest value of ``expr`` (None unless it is known to be non-negative)."""
        return self._poly_max(_poly(expr))

    def _poly_max(self, poly: Poly) -> Poly | None:
        result = Poly.constant(poly.dtype, 0)
        for monomial, coefficient in poly.terms.items():
            if coefficient < 0:
                return None
            term = Poly.constant(poly.dtype, coefficient)
            for atom in monomial:
                largest = self._atom_max(atom)
                if largest is None:
                    return None
                term = term * largest
            result = result + term
        return result

    def _split(self, a: PrimExpr, d: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
        """``(a // d, a % d)`` as simpler expressions, when the remainder is provably in
        ``[0, d)``."""
        try:
            pa, pd = _poly(a), _poly(d)
            if len(pd.terms) != 1:
                return None
            ((d_mono, d_coef),) = pd.terms.items()
            if d_coef <= 0 or any(id(atom) not in self.positive for atom in d_mono):
                return None
            quotient: dict[Monomial, int] = {}
            remainder: dict[Monomial, int] = {}
            for monomial, coefficient in pa.terms.items():
                rest = _without(monomial, d_mono)
                if rest is not None and coefficient % d_coef == 0:
                    quotient[rest] = coefficient // d_coef
                else:
                    remainder[monomial] = coefficient
            q, r = Poly(pa.dtype, quotient), Poly(pa.dtype, remainder)
            largest = self._poly_max(r)
            if largest is not None and self._non_negative(pd.plus_const(-1) - largest):
                return q.to_expr(), r.to_expr()  # 0 <= r < d
            if not quotient:
                return None
            # (q * d + r) // d == q + r // d for every r (floor division), and likewise % d.
            leftover = r.to_expr()
            return (q + Poly.atom(FloorDiv(leftover, d))).to_expr(), FloorMod(leftover, d)
        except PolyOverflow:
            return None

    def _non_negative(self, poly: Poly) -> bool:
        """Whether ``poly`` is at least 0: its terms have non-negative coefficients over
        loop extents (each at least 1), so it is at least the sum of its coefficients."""
        lowest = 0
        for monomial, coefficient in poly.terms.items():
            if monomial and coefficient < 0:
                return False
            if any(id(atom) not in self.positive for atom in monomial):
                return False
            lowest += coefficient
        return lowest >= 0


def simplify_index(expr: PrimExpr, extents: dict[Var, PrimExpr]) -> PrimExpr:
    """``expr`` with ``floordiv``/``floormod`` by products of loop extents resolved where the
    loop ranges prove it (see the module docstring); otherwise unchanged.

    Parameters
    ----------
    expr : PrimExpr
        An index expression over the loop variables of ``extents``.
    extents : dict of Var to PrimExpr
        Each enclosing loop's variable and extent (loops run from 0).
    """
    return _IndexSimplifier(extents).visit(expr)
