"""The relaxvm IR. This first layer holds symbolic scalar expressions (TIR's ``PrimExpr``)
and their arithmetic analysis; Relax IR, StructInfo, IRModule and TIR statements build on it.

The names match TVM's so that a later ``relaxvm.tir`` can re-export them as ``tir.Var``,
``tir.IntImm``, ``tir.min`` (:func:`min_expr`), ``tir.floordiv`` and so on.
"""

from __future__ import annotations

from . import arith, relax
from .arith import Analyzer, ConstIntBound
from .expr import (
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
    ExprLike,
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
)
from .expr_functor import evaluate, free_vars, post_order_visit, substitute
from .op import (
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
from .printer import expr_to_str
from .structural import structural_equal, structural_hash

# isort: split
# Last: the TIR layer imports the names above from this package.
from . import tir

__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "Analyzer",
    "And",
    "BinaryOpExpr",
    "Cast",
    "CmpExpr",
    "ConstIntBound",
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
    "arith",
    "cast",
    "const",
    "convert",
    "evaluate",
    "expr_to_str",
    "floordiv",
    "floormod",
    "free_vars",
    "logical_and",
    "logical_not",
    "logical_or",
    "max_expr",
    "min_expr",
    "post_order_visit",
    "relax",
    "select",
    "structural_equal",
    "structural_hash",
    "substitute",
    "tir",
    "truncdiv",
    "truncmod",
]
