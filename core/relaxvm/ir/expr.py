"""Symbolic scalar expressions: the ``PrimExpr`` family of TVM's TIR (the public module).

The base class and the leaves (:class:`PrimExpr`, :class:`Var`, :class:`SizeVar`,
:class:`IntImm`, :class:`FloatImm`) are defined in :mod:`relaxvm.ir.expr_base`, the operator
nodes (:class:`Add`, :class:`EQ`, :class:`Select`, :class:`Cast` ...) in
:mod:`relaxvm.ir.expr_nodes`; both are re-exported here, with :class:`Range`, so that
``from relaxvm.ir.expr import Var, Add, Range`` works whatever module defines a class. See
:mod:`relaxvm.ir.expr_base` for the semantics (structural ``==``, immutability, operators).
"""

from __future__ import annotations

from .expr_base import ExprLike, FloatImm, IntImm, PrimExpr, SizeVar, Var, _coerce_pair, as_dtype
from .expr_nodes import (
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
    FloorDiv,
    FloorMod,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Select,
    Sub,
)
from .op import sub

__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "And",
    "BinaryOpExpr",
    "Cast",
    "CmpExpr",
    "Div",
    "ExprLike",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "IntImm",
    "Max",
    "Min",
    "Mod",
    "Mul",
    "Not",
    "Or",
    "PrimExpr",
    "Range",
    "Select",
    "SizeVar",
    "Sub",
    "Var",
    "as_dtype",
]


class Range:
    """A half-open integer range ``[min, min + extent)`` (TVM's ``ir.Range``).

    ``Range(end)`` is ``[0, end)``; ``Range(begin, end)`` is ``[begin, end)``; use
    :meth:`from_min_extent` to give the extent directly.
    """

    __slots__ = ("extent", "min")
    min: PrimExpr
    extent: PrimExpr

    def __init__(self, begin: ExprLike, end: ExprLike | None = None) -> None:
        if end is None:
            begin, end = 0, begin
        begin_expr, end_expr = _coerce_pair("Range", begin, end)
        object.__setattr__(self, "min", begin_expr)
        object.__setattr__(self, "extent", sub(end_expr, begin_expr))

    @classmethod
    def from_min_extent(cls, min_value: ExprLike, extent: ExprLike) -> Range:
        """The range ``[min_value, min_value + extent)``."""
        rng = cls.__new__(cls)
        min_expr, extent_expr = _coerce_pair("Range", min_value, extent)
        object.__setattr__(rng, "min", min_expr)
        object.__setattr__(rng, "extent", extent_expr)
        return rng

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Range is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Range):
            return NotImplemented
        return self.min == other.min and self.extent == other.extent

    def __hash__(self) -> int:
        return hash(("Range", self.min, self.extent))

    def __repr__(self) -> str:
        return f"Range.from_min_extent({self.min}, {self.extent})"
