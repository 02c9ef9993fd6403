"""Integer polynomials over opaque atoms: the canonical form the simplifier computes in.

A :class:`Poly` is a sum of monomials with integer coefficients. A monomial is a sorted tuple of
*atoms*: variables, or simplified sub-expressions the polynomial algebra cannot see into
(``x // 4``, ``T.min(a, b)``, ``T.Select(...)``). The empty tuple is the constant term.

Two polynomials are equal exactly when their dicts are, so turning both sides of an equation into
polynomials and subtracting decides every identity of commutative rings (``n*4 == 4*n``,
``(a+b)*2 - 2*b == a*2``). Turning a polynomial back into an expression orders the terms
deterministically: higher degree first, variables before compound atoms, then by name and
creation order; positive terms before subtracted ones, the constant last.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import gcd
from typing import Any

from ...runtime.dtype import DataType
from .._scalar import fits_dtype
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

__all__ = ["Monomial", "Poly", "PolyOverflow", "int_const", "order_key"]

#: A product of atoms, sorted by :func:`order_key`; ``()`` is the constant monomial.
Monomial = tuple[PrimExpr, ...]

_TYPE_RANK = {
    node_type: rank
    for rank, node_type in enumerate(
        (
            Add,
            Sub,
            Mul,
            Div,
            Mod,
            FloorDiv,
            FloorMod,
            Min,
            Max,
            Select,
            Cast,
            EQ,
            NE,
            LT,
            LE,
            GT,
            GE,
            And,
            Or,
            Not,
        )
    )
}
_UNKNOWN_RANK = len(_TYPE_RANK)


class PolyOverflow(Exception):
    """A coefficient of the canonical form does not fit the expression's type.

    Internal: the simplifier catches it and returns the expression unchanged.
    """


def int_const(dtype: DataType, value: int) -> IntImm:
    """An IntImm, or :class:`PolyOverflow` when ``value`` does not fit ``dtype``."""
    if not fits_dtype(value, dtype):
        raise PolyOverflow(f"{value} does not fit {dtype}")
    return IntImm(dtype, value)


def order_key(expr: PrimExpr) -> tuple[Any, ...]:
    """A deterministic total-order key for atoms (cached on the node).

    Variables sort first (by name, then creation order), then compound nodes by kind and
    children, then constants, so ``T.min(n, 4)`` keeps the constant on the right.
    """
    key = expr._sort_key
    if key is not None:
        return key
    if isinstance(expr, Var):
        key = (0, expr.name, expr._serial)
    elif isinstance(expr, IntImm):
        key = (2, str(expr.dtype), expr.value)
    elif isinstance(expr, FloatImm):
        key = (3, str(expr.dtype), expr.value)
    else:
        rank = _TYPE_RANK.get(type(expr), _UNKNOWN_RANK)
        type_name = type(expr).__name__
        key = (1, rank, type_name, str(expr.dtype), *(order_key(op) for op in expr.operands))
    object.__setattr__(expr, "_sort_key", key)
    return key


def _monomial_key(monomial: Monomial) -> tuple[Any, ...]:
    return (-len(monomial), tuple(order_key(atom) for atom in monomial))


class Poly:
    """A polynomial with integer coefficients over atoms, all of one integer type.

    Instances are treated as immutable: every operation returns a new polynomial.
    """

    __slots__ = ("dtype", "terms")

    def __init__(self, dtype: DataType, terms: dict[Monomial, int] | None = None) -> None:
        self.dtype = dtype
        self.terms: dict[Monomial, int] = {m: c for m, c in (terms or {}).items() if c != 0}

    @classmethod
    def constant(cls, dtype: DataType, value: int) -> Poly:
        """The constant polynomial ``value``."""
        return cls(dtype, {(): value})

    @classmethod
    def atom(cls, expr: PrimExpr) -> Poly:
        """The polynomial ``1 * expr`` for an opaque atom."""
        return cls(expr.dtype, {(expr,): 1})

    # ---- queries ----------------------------------------------------------------------------
    @property
    def const_term(self) -> int:
        """The constant term."""
        return self.terms.get((), 0)

    @property
    def is_constant(self) -> bool:
        """Whether there are no non-constant terms."""
        return all(not monomial for monomial in self.terms)

    @property
    def is_zero(self) -> bool:
        """Whether this is the zero polynomial."""
        return not self.terms

    def single_atom(self) -> PrimExpr | None:
        """The atom when the polynomial is exactly ``1 * atom``, else None."""
        if len(self.terms) == 1:
            ((monomial, coefficient),) = self.terms.items()
            if coefficient == 1 and len(monomial) == 1:
                return monomial[0]
        return None

    def coefficient_gcd(self, include_constant: bool = True) -> int:
        """The gcd of the coefficients (0 for the zero polynomial)."""
        result = 0
        for monomial, coefficient in self.terms.items():
            if monomial or include_constant:
                result = gcd(result, coefficient)
        return result

    def ordered_terms(self) -> list[tuple[Monomial, int]]:
        """The non-constant terms in canonical order."""
        return sorted(
            ((m, c) for m, c in self.terms.items() if m), key=lambda t: _monomial_key(t[0])
        )

    def leading_sign(self) -> int:
        """The sign of the first non-constant coefficient in canonical order (0 if none)."""
        ordered = self.ordered_terms()
        if not ordered:
            return 0
        return 1 if ordered[0][1] > 0 else -1

    # ---- arithmetic -------------------------------------------------------------------------
    def __add__(self, other: Poly) -> Poly:
        terms = dict(self.terms)
        for monomial, coefficient in other.terms.items():
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return Poly(self.dtype, terms)

    def __sub__(self, other: Poly) -> Poly:
        return self + other.scale(-1)

    def scale(self, factor: int) -> Poly:
        """Every coefficient multiplied by ``factor``."""
        return Poly(self.dtype, {m: c * factor for m, c in self.terms.items()})

    def divide_exact(self, divisor: int) -> Poly:
        """Every coefficient divided by ``divisor``, which must divide all of them."""
        return Poly(self.dtype, {m: c // divisor for m, c in self.terms.items()})

    def __mul__(self, other: Poly) -> Poly:
        terms: dict[Monomial, int] = {}
        for left, left_coefficient in self.terms.items():
            for right, right_coefficient in other.terms.items():
                monomial = _merge(left, right)
                terms[monomial] = terms.get(monomial, 0) + left_coefficient * right_coefficient
        return Poly(self.dtype, terms)

    def plus_const(self, value: int) -> Poly:
        """``self + value``."""
        return self + Poly.constant(self.dtype, value)

    def split(self, keep: Iterable[Monomial]) -> tuple[Poly, Poly]:
        """Split into (the terms whose monomial is in ``keep``, the rest)."""
        wanted = set(keep)
        inside = {m: c for m, c in self.terms.items() if m in wanted}
        outside = {m: c for m, c in self.terms.items() if m not in wanted}
        return Poly(self.dtype, inside), Poly(self.dtype, outside)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Poly):
            return NotImplemented
        return self.dtype == other.dtype and self.terms == other.terms

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Poly({self.to_expr()})"

    # ---- back to an expression ---------------------------------------------------------------
    def to_expr(self) -> PrimExpr:
        """The canonical expression of this polynomial.

        Raises
        ------
        PolyOverflow
            When a coefficient does not fit the type.
        """
        constant = self.const_term
        ordered = self.ordered_terms()
        positive = [(m, c) for m, c in ordered if c > 0]
        negative = [(m, -c) for m, c in ordered if c < 0]
        result: PrimExpr | None = None
        for monomial, coefficient in positive:
            term = self._term(monomial, coefficient)
            result = term if result is None else Add(result, term)
        if result is None and constant > 0:
            result, constant = int_const(self.dtype, constant), 0
        for monomial, coefficient in negative:
            if result is None:
                result = self._term(monomial, -coefficient)
            else:
                result = Sub(result, self._term(monomial, coefficient))
        if result is None:
            return int_const(self.dtype, constant)
        if constant > 0:
            result = Add(result, int_const(self.dtype, constant))
        elif constant < 0:
            result = Sub(result, int_const(self.dtype, -constant))
        return result

    def _term(self, monomial: Monomial, coefficient: int) -> PrimExpr:
        product: PrimExpr = monomial[0]
        for atom in monomial[1:]:
            product = Mul(product, atom)
        if coefficient != 1:
            product = Mul(product, int_const(self.dtype, coefficient))
        return product


def _merge(left: Monomial, right: Monomial) -> Monomial:
    if not left:
        return right
    if not right:
        return left
    return tuple(sorted(left + right, key=order_key))
